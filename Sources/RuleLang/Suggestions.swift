/// "Did you mean" suggestions by edit distance.
public enum Suggestions {
    /// `unknown KIND 'NAME'`, then `; did you mean 'A' or 'B'?` for the closest of
    /// `candidates`: the one wording of every "unknown" message, in rules, timelines and the CLI.
    public static func unknown(_ kind: String, _ name: String, among candidates: [String], limit: Int = 2) -> String {
        unknown(kind, name, suggestions: closest(to: name, in: candidates, limit: limit))
    }

    /// `unknown KIND 'NAME'` with already chosen suggestions.
    public static func unknown(_ kind: String, _ name: String, suggestions: [String]) -> String {
        var text = "unknown \(kind) '\(name)'"
        if !suggestions.isEmpty {
            text += "; did you mean " + suggestions.map { "'\($0)'" }.joined(separator: " or ") + "?"
        }
        return text
    }

    /// Most candidates compared with one name: past it, the ones closest in length are kept.
    public static let maxCandidates = 1_000

    /// Up to `limit` candidates whose distance to `name` is at most about half its length, closest first.
    /// Costs at most ``maxCandidates`` bounded edit distances, whatever the number of candidates.
    public static func closest(to name: String, in candidates: [String], limit: Int = 2) -> [String] {
        let threshold = max(1, (name.count + 1) / 2)
        let length = name.utf8.count
        // Bucket by length: a candidate whose length differs by more than the threshold cannot match.
        var near = Set(candidates.lazy.filter { abs($0.utf8.count - length) <= threshold && $0 != name })
        if near.count > maxCandidates {
            near = Set(near.sorted { abs($0.utf8.count - length) < abs($1.utf8.count - length) }.prefix(maxCandidates))
        }
        let source = Array(name.lowercased().utf8)
        var scored: [(String, Int)] = []
        for candidate in near {
            let target = Array(candidate.lowercased().utf8)
            let distance = editDistance(source, target, cap: threshold)
            // A suggestion must keep something of both names: 'B' is no typo of 'A'.
            if distance <= threshold && distance < min(source.count, target.count) {
                scored.append((candidate, distance))
            }
        }
        scored.sort { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
        return scored.prefix(limit).map(\.0)
    }

    /// Levenshtein distance (with adjacent transposition), giving up above `cap`.
    static func editDistance(_ a: [UInt8], _ b: [UInt8], cap: Int) -> Int {
        if abs(a.count - b.count) > cap { return cap + 1 }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var row = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            row[0] = i
            var best = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    value = min(value, before[j - 2] + 1)
                }
                row[j] = value
                best = min(best, value)
            }
            if best > cap { return cap + 1 }
            (before, previous, row) = (previous, row, before)
        }
        return previous[b.count]
    }
}
