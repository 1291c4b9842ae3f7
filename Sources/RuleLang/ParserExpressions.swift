// MARK: - Expressions (precedence ladder: or < and < not < comparison < primary)

extension Parser {
    /// expr = and { "or" and }
    mutating func parseExpr() -> Expr {
        var left = parseAnd()
        while match(.kwOr) {
            guard countOperator() else { return Expr(.invalid, left.range.lowerBound..<previous.range.upperBound) }
            let right = parseAnd()
            left = Expr(.binary(.or, left, right), left.range.lowerBound..<right.range.upperBound)
        }
        return left
    }

    /// and = not { "and" not }
    mutating func parseAnd() -> Expr {
        var left = parseNot()
        while match(.kwAnd) {
            guard countOperator() else { return Expr(.invalid, left.range.lowerBound..<previous.range.upperBound) }
            let right = parseNot()
            left = Expr(.binary(.and, left, right), left.range.lowerBound..<right.range.upperBound)
        }
        return left
    }

    /// not = "not" not | comparison
    mutating func parseNot() -> Expr {
        if check(.kwNot) {
            let start = advance().range.lowerBound
            guard enterNesting() else { return Expr(.invalid, start..<previous.range.upperBound) }
            defer { nesting -= 1 }
            let operand = parseNot()
            return Expr(.unary(.not, operand), start..<operand.range.upperBound)
        }
        return parseComparison()
    }

    /// comparison = primary [ ("==" | "!=" | "<=" | ">=" | "<" | ">") primary ]
    mutating func parseComparison() -> Expr {
        let left = parsePrimary()
        guard let op = comparisonOperator() else { return left }
        let opToken = advance()
        if opToken.kind == .equal {
            // `when is_premium = false`: one error with the fix, then read as `==`.
            sink.error(
                Message.assignmentInCondition, opToken.range,
                fixIts: [FixIt(range: opToken.range, replacement: "==")])
        }
        guard countOperator() else { return Expr(.invalid, left.range.lowerBound..<previous.range.upperBound) }
        let right = parsePrimary()
        let range = left.range.lowerBound..<right.range.upperBound
        if (op == .less || op == .greater) && parenDepth == 0 && !bareAnglesCompare {
            let replacement = "(" + file.text(range) + ")"
            sink.error(
                Message.comparisonOutsideParentheses(op.rawValue),
                opToken.range, fixIts: [FixIt(range: range, replacement: replacement)])
        }
        let expr = Expr(.binary(op, left, right), range)
        if comparisonOperator() != nil {
            sink.error(Message.chainedComparison, current.range)
            advance()
            _ = parsePrimary()
            return Expr(.invalid, range.lowerBound..<previous.range.upperBound)
        }
        return expr
    }

    /// The comparison at the current token, if it is one. At depth 0 in a scenario,
    /// `>` is a comparison only when an operand follows it (else it closes the body).
    func comparisonOperator() -> BinaryOperator? {
        switch current.kind {
        case .equalEqual, .equal: return .equal
        case .bangEqual: return .notEqual
        case .lessEqual: return .lessEqual
        case .greaterEqual: return .greaterEqual
        case .less: return .less
        case .greater:
            if parenDepth > 0 || bareAnglesCompare { return .greater }
            switch peek().kind {
            case .identifier where startsContextualDeclaration(at: 1): return nil
            case .integer, .duration, .string, .identifier, .kwTrue, .kwFalse, .leftParen, .kwNot: return .greater
            default: return nil
            }
        default: return nil
        }
    }

    /// True when the token `ahead` starts a declaration whose keyword is contextual (`event NAME`,
    /// `retired scenario`): after a bare `>`, the body closed there.
    func startsContextualDeclaration(at ahead: Int) -> Bool {
        let word = peek(ahead)
        let next = peek(ahead + 1).kind
        switch file.text(word.range) {
        case "event": return next == .identifier || next == .string
        case "retired": return next == .kwScenario
        default: return false
        }
    }

    /// Counts one binary operator; past the limit reports it once and skips the rest of the expression.
    mutating func countOperator() -> Bool {
        operators += 1
        if operators <= Limits.maxExpressionOperators { return true }
        if operators == Limits.maxExpressionOperators + 1 {
            sink.error(Message.expressionTooLong, previous.range)
        }
        synchronize()
        return false
    }

    mutating func enterNesting() -> Bool {
        if nesting >= Limits.maxNestingDepth {
            sink.error(Message.nestingTooDeep, current.range)
            // Skip the rest of this expression: to the end of the body or declaration.
            synchronize()
            return false
        }
        nesting += 1
        return true
    }

    /// primary = INT | DURATION | STRING | "true" | "false" | NAME | call | "(" expr ")"
    mutating func parsePrimary() -> Expr {
        let token = current
        switch token.kind {
        case .integer:
            advance()
            return Expr(.integer(Lexer.integerValue(file, token.range)), token.range)
        case .duration:
            advance()
            return Expr(.duration(Lexer.durationValue(file, token.range)), token.range)
        case .string:
            advance()
            return Expr(.string(Lexer.stringValue(file, token.range)), token.range)
        case .kwTrue, .kwFalse:
            advance()
            return Expr(.bool(token.kind == .kwTrue), token.range)
        case .identifier:
            advance()
            if check(.leftParen) { return parseCall(Name(text(token), token.range)) }
            return Expr(.name(text(token)), token.range)
        case .leftParen:
            advance()
            guard enterNesting() else { return Expr(.invalid, token.range.lowerBound..<previous.range.upperBound) }
            parenDepth += 1
            let inner = parseExpr()
            parenDepth -= 1
            nesting -= 1
            if inner.kind == .invalid && !check(.rightParen) {
                // The inner error was reported; a missing ')' would only repeat it.
                return Expr(.invalid, token.range.lowerBound..<previous.range.upperBound)
            }
            if expect(.rightParen, "')'") == nil {
                return Expr(.invalid, token.range.lowerBound..<previous.range.upperBound)
            }
            return Expr(.parenthesized(inner), token.range.lowerBound..<previous.range.upperBound)
        default:
            error(expected: "an expression")
            if token.kind == .invalid { advance() }
            return Expr(.invalid, token.range)
        }
    }

    /// call = NAME "(" event [ scope ] ")"
    mutating func parseCall(_ function: Name) -> Expr {
        advance()  // '('
        let start = function.range.lowerBound
        if BuiltinFunction(rawValue: function.text) == nil {
            // `days_since_install()`, `nope(3)`: an unknown function, whatever its arguments.
            let suggestions = Suggestions.closest(to: function.text, in: BuiltinFunction.names)
            sink.error(
                Message.unknown(.unknownFunction, "function", function.text, suggestions), function.range,
                fixIts: suggestions.prefix(1).map { FixIt(range: function.range, replacement: $0) })
            skipPastCall()
            return Expr(.invalid, start..<previous.range.upperBound)
        }
        // `sum(purchase.amount ...)`: an event's property.
        var property: Name?
        var member: Name?
        if function.text == BuiltinFunction.sum.name {
            guard check(.memberName) else {
                error(expected: "an event's int property, such as 'purchase.amount'")
                skipPastCall()
                return Expr(.invalid, start..<previous.range.upperBound)
            }
            let token = advance()
            let text = self.text(token)
            let dot = text.utf8.firstIndex(of: UInt8(ascii: "."))!
            let split = token.range.lowerBound + text.utf8.distance(from: text.utf8.startIndex, to: dot)
            member = Name(String(text[..<dot]), token.range.lowerBound..<split)
            property = Name(String(text[text.index(after: dot)...]), split + 1..<token.range.upperBound)
            noteNewer(.properties, "'sum'", at: token.range)
        }
        guard let argument = member ?? parseEventName() else {
            skipPastCall()
            return Expr(.invalid, start..<previous.range.upperBound)
        }
        // `count(RateApp: declined per version)`: a scenario's outcomes.
        var outcome: Name?
        if match(.colon) {
            guard let parsed = parseOutcomeName() else {
                skipPastCall()
                return Expr(.invalid, start..<previous.range.upperBound)
            }
            outcome = parsed
        }
        // `count(purchase where amount >= 10 within 30d)`: the events whose properties pass.
        var filter: Expr?
        if outcome == nil, check(.identifier), current.range.count == 5, text(current) == "where" {
            let word = advance().range
            // Inside the call's parentheses: `<` and `>` compare.
            parenDepth += 1
            let parsed = parseExpr()
            parenDepth -= 1
            if case .invalid = parsed.kind {
                skipPastCall()
                return Expr(.invalid, start..<previous.range.upperBound)
            }
            filter = parsed
            noteNewer(.properties, "'where'", at: word)
        }
        var scope: Scope?
        if check(.kwPer) || check(.kwWithin) {
            guard let parsed = parseScope() else {
                skipPastCall()
                return Expr(.invalid, start..<previous.range.upperBound)
            }
            scope = parsed
        }
        if expect(.rightParen, "')' to close the call to '\(function.text)'") == nil {
            skipPastCall()
            return Expr(.invalid, start..<previous.range.upperBound)
        }
        let range = start..<previous.range.upperBound
        if function.text == BuiltinFunction.activeDays.name { noteNewer(.days, "'active_days'", at: range) }
        if outcome != nil { noteNewer(.outcomes, "a scenario's outcomes", at: range) }
        if function.text == BuiltinFunction.bucket.name { noteNewer(.buckets, "'bucket'", at: range) }
        return Expr(
            .call(
                function: function, argument: argument, scope: scope, outcome: outcome, filter: filter,
                property: property), range)
    }

    /// After an error inside a call: skips to its ')' when it is on the way.
    mutating func skipPastCall() {
        while !check(.eof) && !check(.semicolon) && !check(.greater) && !current.kind.startsDeclaration {
            if advance().kind == .rightParen { return }
        }
    }
}
