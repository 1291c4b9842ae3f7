import Foundation
import RuleLang

/// What refused a scenario, for `defer up to D`: true once a finding other than a context or a
/// local window refused it.
struct DeferralFindings: DecisionFindings {
    static var detailed: Bool { true }
    var blocked = false

    mutating func add(
        _ text: @autoclosure () -> String, group: String?, _ result: EngineCore.Assessment,
        window: @autoclosure () -> LocalWindow?
    ) {
        guard !result.passes, !blocked, window() == nil else { return }
        // A context clause prints as `in A, B` or `not in A, B`; no other finding starts so.
        let text = text()
        if !(text.hasPrefix("in ") || text.hasPrefix("not in ")) { blocked = true }
    }
}

/// Deferral (language 1.3): grammar.md, "Deferral".
extension EngineCore {
    /// The prefix of a wish's to-do: `@wish:SCENARIO`, its info the time it lasts until.
    static let wishPrefix = "@wish:"

    func wishKey(_ index: Int) -> String { EngineCore.wishPrefix + NameTable.canonical(rules.scenarios[index].name) }

    /// Scenario `index`'s wish, when its rules defer and one is stored (pending or not): when
    /// it was made and the time it lasts until.
    func wish(of index: Int) -> (made: Double, until: Double)? {
        guard rules.scenarios[index].deferral > 0, !todos.isEmpty,
            let item = todos[wishKey(index)] ?? wishKeys(formerNamesOf: index).lazy.compactMap({ todos[$0] }).first,
            let until = Double(item.info?["until"] ?? "")
        else { return nil }
        return (item.created, until)
    }

    /// The keys of wishes kept under scenario `index`'s former names (`was`): made before the
    /// rules that renamed it.
    func wishKeys(formerNamesOf index: Int) -> [String] {
        guard !rules.formerScenarios.isEmpty else { return [] }
        return rules.formerScenarios.filter { $0.value == index }.keys.sorted().map {
            EngineCore.wishPrefix + NameTable.canonical($0)
        }
    }

    /// True while scenario `index` has a wish that lasts past `time`.
    func isWished(_ index: Int, now time: Double) -> Bool {
        wish(of: index).map { time < $0.until } ?? false
    }

    /// A call that would show scenario `index` was refused: with `defer up to D`, when only
    /// contexts and local windows refused it, the wish is kept until D from now (a wish still
    /// pending keeps its own end: the bound is never stretched).
    mutating func noteRefusal(_ index: Int, now time: Double) {
        let deferral = rules.scenarios[index].deferral
        guard deferral > 0, !isWished(index, now: time) else { return }
        var found = DeferralFindings()
        guard decide(index, now: time, &found) == .refused, !found.blocked else { return }
        if shared { _ = lockFileForWriting() }
        let key = wishKey(index)
        let item = ToDoItem(
            created: time, expires: nil,
            info: ["scenario": rules.scenarios[index].name, "until": String(time + deferral)])
        todos[key] = item
        save([EngineState.change(todo: key, item)])
    }

    /// Scenario `index` executed: its wish, if any, is granted (the caller commits).
    mutating func grantWish(_ index: Int) {
        guard !todos.isEmpty else { return }
        for key in [wishKey(index)] + wishKeys(formerNamesOf: index) where todos[key] != nil {
            todos[key] = nil
            record.add(EngineState.change(todo: key, nil))
        }
    }

    /// `defer up to D`'s line of an explanation: the wish, pending or expired, if any.
    func wishLine(of index: Int, now time: Double) -> (ClauseExplanation, until: Double?)? {
        let deferral = rules.scenarios[index].deferral
        guard deferral > 0 else { return nil }
        let text = "defer up to \(DurationText.format(Int64(deferral)))"
        guard let wish = wish(of: index) else {
            return (ClauseExplanation(clause: text, group: nil, passes: true, detail: "no wish"), nil)
        }
        if time < wish.until {
            let detail =
                "wished \(DurationText.human(time - wish.made)) ago, kept \(DurationText.human(wish.until - time)) more"
            return (ClauseExplanation(clause: text, group: nil, passes: true, detail: detail), wish.until)
        }
        let detail = "the wish expired \(DurationText.human(time - wish.until)) ago"
        return (ClauseExplanation(clause: text, group: nil, passes: true, detail: detail), nil)
    }
}
