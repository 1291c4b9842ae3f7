extension ClauseKind {
    /// True when two clauses mean the same, ranges aside: the checker finds duplicate clauses
    /// with it without printing each clause to text. Clauses of different kinds are told
    /// apart by their keyword before any payload is compared.
    func means(_ other: ClauseKind) -> Bool {
        guard word == other.word else { return false }
        // One arm per kind (no `default`): a new clause kind must say what a duplicate of it is.
        switch self {
        case .minEvents(let x, let s):
            guard case .minEvents(let y, let t) = other else { return false }
            return x.value == y.value && s.kind == t.kind
        case .minEventsWhere(let x, let f, let s):
            guard case .minEventsWhere(let y, let g, let t) = other else { return false }
            return x.value == y.value && ClauseKind.same(f, g) && s.kind == t.kind
        case .maxEvents(let x, let s):
            guard case .maxEvents(let y, let t) = other else { return false }
            return x.value == y.value && s.kind == t.kind
        case .maxExec(let x, let s):
            guard case .maxExec(let y, let t) = other else { return false }
            return x.value == y.value && s.kind == t.kind
        case .sinceFirst(let x):
            guard case .sinceFirst(let y) = other else { return false }
            return x.seconds == y.seconds
        case .sinceLast(let x):
            guard case .sinceLast(let y) = other else { return false }
            return x.seconds == y.seconds
        case .between(let x):
            guard case .between(let y) = other else { return false }
            return x.seconds == y.seconds
        case .minDays(let x, let d):
            guard case .minDays(let y, let e) = other else { return false }
            return x.value == y.value && d.seconds == e.seconds
        case .growingBetween(let x):
            guard case .growingBetween(let y) = other else { return false }
            return x.map(\.seconds) == y.map(\.seconds)
        case .on(let x):
            guard case .on(let y) = other else { return false }
            return x.map(\.text) == y.map(\.text)
        case .when(let x):
            guard case .when(let y) = other else { return false }
            return ClauseKind.same(x, y)
        case .priority(let x):
            guard case .priority(let y) = other else { return false }
            return x.value == y.value
        case .after(let x, let w):
            guard case .after(let y, let v) = other else { return false }
            return x.text == y.text && w.means(v)
        case .during(let a, let b, let o):
            guard case .during(let c, let d, let p) = other else { return false }
            return a.minutes == c.minutes && b.minutes == d.minutes && o == p
        case .days(let x):
            guard case .days(let y) = other else { return false }
            return Weekday.mask(x) == Weekday.mask(y)
        case .from(let x):
            guard case .from(let y) = other else { return false }
            return x.dayNumber == y.dayNumber
        case .until(let x):
            guard case .until(let y) = other else { return false }
            return x.dayNumber == y.dayNumber
        case .holdout(let x, let s):
            guard case .holdout(let y, let t) = other else { return false }
            return x.value == y.value && s.text == t.text
        case .contexts(let x, let o):
            guard case .contexts(let y, let p) = other else { return false }
            return Set(x.map(\.text)) == Set(y.map(\.text)) && o == p
        case .countsAfter(let x):
            guard case .countsAfter(let y) = other else { return false }
            return x.seconds == y.seconds
        case .deferral(let x):
            guard case .deferral(let y) = other else { return false }
            return x.seconds == y.seconds
        }
    }

    /// Structural equality of expressions, ranges aside.
    static func same(_ a: Expr, _ b: Expr) -> Bool {
        switch (a.kind, b.kind) {
        case (.integer(let x), .integer(let y)), (.duration(let x), .duration(let y)): return x == y
        case (.string(let x), .string(let y)), (.name(let x), .name(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.unary(let p, let x), .unary(let q, let y)): return p == q && same(x, y)
        case (.binary(let p, let x1, let x2), .binary(let q, let y1, let y2)):
            return p == q && same(x1, y1) && same(x2, y2)
        case (.call(let f, let x, let s, let o, let w, let m), .call(let g, let y, let t, let p, let v, let n)):
            let filters = w.flatMap { w in v.map { same(w, $0) } } ?? (w == nil && v == nil)
            return f.text == g.text && x.text == y.text && s?.kind == t?.kind && o?.text == p?.text && filters
                && m?.text == n?.text
        case (.parenthesized(let x), .parenthesized(let y)): return same(x, y)
        case (.invalid, .invalid): return true
        default: return false
        }
    }
}

extension AfterWait {
    /// True when two waits mean the same, ranges aside.
    func means(_ other: AfterWait) -> Bool {
        switch (self, other) {
        case (.duration(let x), .duration(let y)): return x.seconds == y.seconds
        case (.next(let x, _), .next(let y, _)): return x == y
        case (.never, .never): return true
        default: return false
        }
    }
}

extension ClauseKind {
    /// True for the clauses whose refusal `defer up to` waits out: a context or a local window.
    var isDeferrable: Bool {
        switch self {
        case .contexts, .during, .days, .from, .until: return true
        default: return false
        }
    }
}
