/// A clause compared by meaning, ranges aside: the checker finds duplicate clauses with it
/// without printing each clause to text.
struct ClauseKey: Hashable {
    let kind: ClauseKind

    static func == (a: ClauseKey, b: ClauseKey) -> Bool {
        switch (a.kind, b.kind) {
        case (.minEvents(let x, let s), .minEvents(let y, let t)), (.maxEvents(let x, let s), .maxEvents(let y, let t)),
            (.maxExec(let x, let s), .maxExec(let y, let t)):
            return x.value == y.value && s.kind == t.kind
        case (.sinceFirst(let x), .sinceFirst(let y)), (.sinceLast(let x), .sinceLast(let y)),
            (.between(let x), .between(let y)):
            return x.seconds == y.seconds
        case (.on(let x), .on(let y)): return x.map(\.text) == y.map(\.text)
        case (.when(let x), .when(let y)): return ClauseKey.same(x, y)
        case (.priority(let x), .priority(let y)): return x.value == y.value
        default: return false
        }
    }

    func hash(into hasher: inout Hasher) {
        switch kind {
        case .minEvents(let n, let s), .maxEvents(let n, let s), .maxExec(let n, let s):
            hasher.combine(kind.keyword.utf8.count)
            hasher.combine(kind.keyword.utf8.first)
            hasher.combine(n.value)
            hasher.combine(s.kind)
        case .sinceFirst(let d), .sinceLast(let d), .between(let d):
            hasher.combine(kind.keyword.utf8.count)
            hasher.combine(kind.keyword.utf8.last)
            hasher.combine(d.seconds)
        case .on(let names):
            hasher.combine(1)
            for name in names { hasher.combine(name.text) }
        case .when(let expr):
            hasher.combine(2)
            ClauseKey.hash(expr, into: &hasher)
        case .priority(let n):
            hasher.combine(3)
            hasher.combine(n.value)
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
        case (.call(let f, let x, let s), .call(let g, let y, let t)):
            return f.text == g.text && x.text == y.text && s?.kind == t?.kind
        case (.parenthesized(let x), .parenthesized(let y)): return same(x, y)
        case (.invalid, .invalid): return true
        default: return false
        }
    }

    static func hash(_ expr: Expr, into hasher: inout Hasher) {
        switch expr.kind {
        case .integer(let value):
            hasher.combine(10)
            hasher.combine(value)
        case .duration(let value):
            hasher.combine(11)
            hasher.combine(value)
        case .string(let text):
            hasher.combine(12)
            hasher.combine(text)
        case .bool(let flag): hasher.combine(flag)
        case .name(let text):
            hasher.combine(13)
            hasher.combine(text)
        case .unary(_, let operand):
            hasher.combine(14)
            hash(operand, into: &hasher)
        case .binary(let op, let left, let right):
            hasher.combine(op)
            hash(left, into: &hasher)
            hash(right, into: &hasher)
        case .call(let function, let argument, let scope):
            hasher.combine(function.text)
            hasher.combine(argument.text)
            hasher.combine(scope?.kind)
        case .parenthesized(let inner):
            hasher.combine(15)
            hash(inner, into: &hasher)
        case .invalid: hasher.combine(16)
        }
    }
}
