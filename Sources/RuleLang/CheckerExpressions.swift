/// The checker's expressions: types, names and calls in `when` clauses.
extension Checker {
    // MARK: - Expressions

    /// True when `expr` is a string literal or a string param (without reporting anything).
    func otherIsString(_ expr: Expr) -> Bool {
        switch expr.kind {
        case .string: return true
        case .name(let name): return (filterEvent == nil ? paramTypes[name] : filterProperties[name]) == .string
        case .parenthesized(let inner): return otherIsString(inner)
        default: return false
        }
    }

    /// The type of `expr`, or nil when it has an error (already reported).
    mutating func typeOf(_ expr: Expr, _ file: SourceFile) -> ValueType? {
        switch expr.kind {
        case .integer: return .int
        case .duration: return .duration
        case .string: return .string
        case .bool: return .bool
        case .invalid: return nil
        case .parenthesized(let inner): return typeOf(inner, file)
        case .name(let name):
            if let event = filterEvent {
                if let type = filterProperties[name] { return type }
                let suggestions = suggest(name, filterProperties.keys.sorted())
                error(
                    Message.unknownProperty(name, of: event, suggestions), file, expr.range,
                    fixIts: suggestions.prefix(1).map { FixIt(range: expr.range, replacement: $0) })
                return nil
            }
            if let type = paramTypes[name] { return type }  // a param shadows a built-in value
            if let builtin = BuiltinValue(rawValue: name) { return builtin.type }
            let suggestions = suggest(name, paramList)
            var notes: [DiagnosticNote] = []
            if scenarioNames.contains(name) {
                notes.append(DiagnosticNote("'\(name)' is a scenario; use 'executions(\(name))' or 'count(\(name))'"))
            } else if suggestions.isEmpty {
                notes.append(DiagnosticNote("a 'when' may name only params declared with 'param \(name): TYPE'"))
            }
            error(
                Message.unknown(.unknownName, "param", name, suggestions), file, expr.range, notes: notes,
                fixIts: suggestions.prefix(1).map { FixIt(range: expr.range, replacement: $0) })
            return nil
        case .unary(_, let operand):
            guard let type = typeOf(operand, file) else { return nil }
            if type != .bool {
                error(Message.operandNotBool("not", type), file, operand.range)
                return nil
            }
            return .bool
        case .binary(let op, let left, let right):
            // `plan == free`: a bare word compared with a string is a string without quotes.
            if op == .equal || op == .notEqual {
                for (side, other) in [(left, right), (right, left)] {
                    guard case .name(let word) = side.kind,
                        filterEvent == nil ? paramTypes[word] == nil : filterProperties[word] == nil,
                        filterEvent != nil || BuiltinValue(rawValue: word) == nil,
                        otherIsString(other)
                    else { continue }
                    // In a filter, a near miss of a property is a misspelt property (did you mean).
                    if filterEvent != nil, !suggest(word, filterProperties.keys.sorted()).isEmpty { break }
                    _ = typeOf(other, file)
                    error(
                        Message.stringNeedsQuotes(word, names: filterEvent == nil ? "a param" : "a property"), file,
                        side.range,
                        fixIts: [FixIt(range: side.range, replacement: Printer.string(word))])
                    return nil
                }
            }
            let lt = typeOf(left, file)
            let rt = typeOf(right, file)
            if !op.isComparison {
                var ok = true
                for (type, side) in [(lt, left), (rt, right)] {
                    if let type, type != .bool {
                        error(Message.operandNotBool(op.rawValue, type), file, side.range)
                        ok = false
                    }
                }
                return ok && lt != nil && rt != nil ? .bool : nil
            }
            guard let lt, let rt else { return nil }
            if lt != rt {
                var fixIts: [FixIt] = []
                for side in [left, right] {
                    if case .integer(let seconds) = side.kind, lt == .duration || rt == .duration {
                        fixIts.append(FixIt(range: side.range, replacement: DurationText.format(seconds)))
                    }
                }
                error(Message.cannotCompare(lt, rt), file, expr.range, fixIts: fixIts)
                return nil
            }
            if op != .equal && op != .notEqual && lt != .int && lt != .duration {
                error(Message.notOrdered(op.rawValue, lt), file, expr.range)
                return nil
            }
            return .bool
        case .call(let function, let argument, let scope, let outcome, let filter, let property):
            if filterEvent != nil {
                error(Message.filterCall, file, expr.range)
                return nil
            }
            guard let builtin = BuiltinFunction(rawValue: function.text) else {
                let suggestions = Suggestions.closest(to: function.text, in: BuiltinFunction.names)
                error(
                    Message.unknown(.unknownFunction, "function", function.text, suggestions), file, function.range,
                    fixIts: suggestions.prefix(1).map { FixIt(range: function.range, replacement: $0) })
                return nil
            }
            if let scope, !builtin.takesScope {
                error(Message.noScope(function.text), file, scope.range)
                return nil
            }
            if outcome != nil {
                // `count(RateApp: declined)`: the argument is a scenario, whose outcome stream is read.
                guard builtin == .count || builtin == .sinceFirst || builtin == .sinceLast else {
                    error(Message.outcomeFunction(function.text), file, function.range)
                    return nil
                }
                guard scenarioNames.contains(argument.text) else {
                    unknownScenario(argument, among: scenarioList, file)
                    return nil
                }
                return builtin.resultType
            }
            if builtin == .activeDays {
                guard let scope, case .within(let seconds) = scope.kind else {
                    error(Message.dayWindowRequired, file, scope?.range ?? function.range)
                    return nil
                }
                guard checkDayWindow(seconds, scope.range, file) else { return nil }
            }
            // `executions(crash)`, `todo(crash)`: the engine's streams are streams, not scenarios or to-dos.
            if builtin.argument != .stream, EngineStream.isReserved(argument.text) {
                let word = EngineStream.word(for: argument.text) ?? argument.text
                error(Message.engineStreamArgument(word, function.text), file, argument.range)
                return nil
            }
            if let property {
                // `sum(purchase.amount ...)`: an int property of the event (a window is checked
                // with the comparison it is in: ``Checker/checkWindowedSums(in:_:)``).
                checkStream(argument, file)
                guard let declared = program.properties[argument.text] else {
                    error(Message.noProperties(argument.text), file, argument.range)
                    return nil
                }
                guard let type = declared.first(where: { $0.name.text == property.text })?.type else {
                    let suggestions = suggest(property.text, declared.map(\.name.text))
                    error(
                        Message.unknownProperty(property.text, of: argument.text, suggestions), file, property.range,
                        fixIts: suggestions.prefix(1).map { FixIt(range: property.range, replacement: $0) })
                    return nil
                }
                guard type == .int else {
                    error(Message.sumNotInt(property.text, type), file, property.range)
                    return nil
                }
                if let filter, !checkFilter(filter, of: argument, file) { return nil }
                return builtin.resultType
            }
            if builtin.argument == .salt {
                // A salt is text, not a name: written quoted, so that it reads as what it is.
                // An empty salt is a salt like any other (grammar.md publishes its vector).
                guard Checker.isQuoted(argument, in: file) else {
                    error(
                        Message.saltNotQuoted(argument.text), file, argument.range,
                        fixIts: [FixIt(range: argument.range, replacement: Printer.string(argument.text))])
                    return nil
                }
                return builtin.resultType
            }
            if let filter {
                guard builtin.argument == .stream else {
                    error(Message.filterFunction(function.text), file, function.range)
                    return nil
                }
                checkStream(argument, file)
                return checkFilter(filter, of: argument, file) ? builtin.resultType : nil
            }
            if builtin.argument == .stream || builtin.argument == .todo { checkStream(argument, file) }
            if builtin.argument == .scenarioOrGroup, !formerScenariosAndGroups.isEmpty,
                let new = formerScenariosAndGroups[argument.text],
                !scenarioNames.contains(argument.text), !groupNames.contains(argument.text)
            {
                error(
                    Message.readsMovedName(argument.text, new, what: "executions"), file, argument.range,
                    fixIts: [FixIt(range: argument.range, replacement: Printer.name(new))])
            } else if builtin.argument == .scenarioOrGroup && !scenarioNames.contains(argument.text)
                && !groupNames.contains(argument.text)
            {
                unknownScenario(argument, among: scenarioAndGroupList, file)
                return nil
            }
            return builtin.resultType
        }
    }

    /// An unknown scenario (or group) named at `name`, with did-you-mean among `names` and its fix.
    mutating func unknownScenario(_ name: Name, among names: [String], _ file: SourceFile) {
        let suggestions = suggest(name.text, names)
        error(
            Message.unknown(.unknownScenario, "scenario", name.text, suggestions), file, name.range,
            fixIts: suggestions.prefix(1).map { FixIt(range: name.range, replacement: $0) })
    }

    // MARK: - Scopes and windows

    /// True when every event counted in `narrow` is also counted in `wide`.
    static func scope(_ narrow: ScopeKind, isWithin wide: ScopeKind) -> Bool {
        switch (narrow, wide) {
        case _ where narrow == wide: return true
        case (_, .install): return true
        case (.session, .version): return true
        case (.within(let a), .within(let b)): return a <= b
        case (.day, .week): return true
        default: return false
        }
    }

    /// A windowed sum (`sum(purchase.amount within 30d)`) is compared with an integer, at most
    /// the windowed threshold's limit: it keeps that many units, one more than the number.
    mutating func checkWindowedSums(in expr: Expr, _ file: SourceFile) {
        for (call, threshold) in expr.windowedSums {
            guard let threshold else {
                error(Message.sumWindow, file, call.range)
                continue
            }
            if threshold > Limits.maxWindowedThreshold {
                error(Message.windowThresholdTooLarge(threshold), file, call.range)
            }
        }
    }

    mutating func checkWindow(_ n: IntLiteral, _ scope: Scope, _ file: SourceFile) {
        switch scope.kind {
        case .within, .day, .week:
            // Each keeps that many recent times, one more than the number.
            if n.value > Limits.maxWindowedThreshold { error(Message.windowThresholdTooLarge(n.value), file, n.range) }
        case .install, .version, .session: break
        }
    }
}
