import RuleLang

/// Why an engine could not be created or a call was refused.
public enum RuleEngineError: Error, CustomStringConvertible {
    /// The rules have errors; the diagnostics say where.
    case invalidRules([Diagnostic])
    /// A file could not be read.
    case unreadable(path: String)
    /// No `param` of that name is declared.
    case unknownParam(String)
    /// The value's type is not the param's declared type.
    case typeMismatch(param: String, declared: ValueType, given: ValueType)
    /// An expression given to ``RuleEngine/check(_:)-(Expr)`` has errors.
    case invalidExpression([Diagnostic])
    /// The store could not be read.
    case store(RuleStoreError)
    /// No scenario of that name (nor a former name) is in the rules.
    case unknownScenario(String)
    /// ``RuleEngine/finish(_:_:)`` was given a presentation already finished (or made by
    /// another engine).
    case presentationNotOpen(scenario: String)

    public var description: String {
        switch self {
        case .invalidRules(let diagnostics), .invalidExpression(let diagnostics):
            return DiagnosticRenderer().render(diagnostics.filter { $0.severity == .error })
        case .unreadable(let path): return "cannot read '\(path)'"
        case .unknownParam(let name): return "unknown param '\(name)'"
        case .typeMismatch(let name, let declared, let given):
            return "param '\(name)' is '\(declared.rawValue)', not '\(given.rawValue)'"
        case .store(let error): return error.description
        case .unknownScenario(let name): return "unknown scenario '\(name)'"
        case .presentationNotOpen(let scenario):
            return "the presentation of '\(scenario)' is not open: it was finished already, or made by another engine"
        }
    }
}
