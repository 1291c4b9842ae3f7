// MARK: - Clauses (expressions: ParserExpressions.swift)

extension Parser {
    /// clause = count_clause | time_clause | on_clause | when_clause | priority_clause
    mutating func parseClause() -> Clause? {
        // `not in checkout, pin`: never in these contexts.
        if check(.kwNot), peek().kind == .identifier, text(peek()) == "in" {
            let start = advance().range.lowerBound
            advance()
            guard let kind = parseContextList(outside: true) else { return nil }
            let range = start..<previous.range.upperBound
            noteNewer(.contexts, "'not in'", at: range)
            return Clause(kind: kind, range: range)
        }
        // `not during 22:00-08:00`: the hours outside a range.
        if check(.kwNot), peek().kind == .identifier, text(peek()) == "during" {
            let start = advance().range.lowerBound
            advance()
            guard let kind = parseDuringClause(outside: true) else { return nil }
            let range = start..<previous.range.upperBound
            noteNewer(.localTime, "'during'", at: range)
            return Clause(kind: kind, range: range)
        }
        if startsConditionWithoutWhen {
            // `is_premium == false`, `not is_premium`: a condition without its `when`.
            let start = current.range.lowerBound
            sink.error(
                Message.conditionNeedsWhen, current.range,
                fixIts: [FixIt(range: start..<start, replacement: "when ")])
            operators = 0
            let expr = parseExpr()
            return Clause(kind: .when(expr), range: start..<previous.range.upperBound)
        }
        guard check(.identifier) else {
            error(expected: "a clause (such as 'min_events 5' or 'max_exec 1')")
            return nil
        }
        let keywordToken = advance()
        let word = clauseWord(keywordToken)
        let keyword = word?.text ?? text(keywordToken)
        let start = keywordToken.range.lowerBound
        var kind: ClauseKind?
        switch word {
        case .minEvents?, .maxEvents?, .maxExec?:
            kind = parseCountClause(keyword)
        case let word?
        where (word == .sinceFirst || word == .sinceLast) && check(.identifier) && peek().kind == .duration:
            // `since_last shared 4d`: another event's age is a condition.
            let event = advance()
            let duration = advance()
            let range = start..<duration.range.upperBound
            let fix = "when \(keyword)(\(text(event))) >= \(text(duration))"
            sink.error(
                Message.sinceLastTakesDuration(keyword, text(event), text(duration)), event.range,
                fixIts: [FixIt(range: range, replacement: fix)])
            return nil
        case .sinceFirst?, .sinceLast?, .between?:
            kind = parseDurationLiteral().map { value in
                word == .sinceFirst ? .sinceFirst(value) : word == .sinceLast ? .sinceLast(value) : .between(value)
            }
            // `between 1d, 3d, 1w`: growing gaps.
            if word == .between, case .between(let first)? = kind, check(.comma) {
                var gaps = [first]
                while match(.comma) {
                    guard let next = parseDurationLiteral() else { break }
                    gaps.append(next)
                }
                kind = .growingBetween(gaps)
            }
        case .minDays?:
            // min_days N within D
            if let n = parseIntLiteral() {
                if expect(.kwWithin, "'within' and a number of days after 'min_days \(n.value)'") != nil {
                    kind = parseDurationLiteral().map { ClauseKind.minDays(n, $0) }
                }
            }
        case .on?:
            kind = parseOnClause()
        case .when?:
            operators = 0
            kind = .when(parseExpr())
        case .priority?:
            kind = parseIntLiteral().map(ClauseKind.priority)
        case .after?:
            kind = parseAfterClause()
        case .during?:
            kind = parseDuringClause(outside: false)
        case .days?:
            kind = parseDaysClause()
        case .from?, .until?:
            kind = parseDate(keyword).map { word == .from ? .from($0) : .until($0) }
        case .contexts?:
            kind = parseContextList(outside: false)
        case .countsAfter?:
            // counts after DURATION visible
            if expectWord("after", "'after' in 'counts after 3s visible'") != nil,
                let duration = parseDurationLiteral(),
                expectWord("visible", "'visible' after 'counts after \(DurationText.format(duration.seconds))'") != nil
            {
                kind = .countsAfter(duration)
            }
        case .deferral?:
            // defer up to DURATION
            if expectWord("up", "'up to' and a duration after 'defer' (such as 'defer up to 30m')") != nil,
                expectWord("to", "'to' after 'defer up' (such as 'defer up to 30m')") != nil
            {
                kind = parseDurationLiteral().map(ClauseKind.deferral)
            }
        case .holdout?:
            // holdout INTEGER "%" STRING
            if let share = parseIntLiteral(), expect(.percent, "'%' after the holdout's share") != nil,
                let salt = expect(.string, "the holdout's salt, a string such as \"winback-2026\"")
            {
                kind = .holdout(share, salt: Name(Lexer.stringValue(file, salt.range), salt.range))
            }
        case nil:
            let suggestions = Suggestions.closest(to: keyword, in: ClauseKind.keywords)
            sink.error(
                Message.unknown(.unknownClause, "clause", keyword, suggestions), keywordToken.range,
                fixIts: suggestions.prefix(1).map { FixIt(range: keywordToken.range, replacement: $0) })
            return nil
        }
        guard let kind else { return nil }
        let range = start..<previous.range.upperBound
        switch kind {
        case .growingBetween: noteNewer(.growingBetween, at: range)
        case .minDays: noteNewer(.days, "'min_days'", at: range)
        case .after: noteNewer(.outcomes, "'after'", at: range)
        case .during, .days, .from, .until: noteNewer(.localTime, "'\(keyword)'", at: range)
        case .holdout: noteNewer(.buckets, "'holdout'", at: range)
        case .contexts: noteNewer(.contexts, "'in'", at: range)
        case .countsAfter: noteNewer(.countedExposure, "'counts after'", at: range)
        case .deferral: noteNewer(.deferral, "'defer'", at: range)
        default: break
        }
        return Clause(kind: kind, range: range)
    }

    /// The clause keyword `token` spells, if any, compared as bytes.
    func clauseWord(_ token: Token) -> ClauseWord? {
        let range = token.range
        return file.bytes.withUnsafeBufferPointer { bytes in
            for spelling in ClauseWord.spellings where spelling.bytes.count == range.count {
                var same = true
                for (offset, byte) in spelling.bytes.enumerated() where bytes[range.lowerBound + offset] != byte {
                    same = false
                    break
                }
                if same { return spelling.word }
            }
            return nil
        }
    }

    /// True at `not`, `(`, or a name that is not a clause keyword followed by a comparison,
    /// `and`, `or` or a call's `(`: the start of a condition written without `when`.
    var startsConditionWithoutWhen: Bool {
        switch current.kind {
        case .kwNot, .leftParen: return true
        case .identifier:
            // The next token's kind first: the keyword's text is read only when it could matter.
            switch peek().kind {
            case .equalEqual, .bangEqual, .lessEqual, .greaterEqual, .equal, .kwAnd, .kwOr, .leftParen:
                return !ClauseKind.keywords.contains(text(current))
            default: return false
            }
        default: return false
        }
    }

    /// count_clause = ("min_events" | "max_events" | "max_exec") INT [ scope ]
    mutating func parseCountClause(_ keyword: String) -> ClauseKind? {
        if check(.kwPer) || check(.kwWithin) {
            // `max_exec per version 1`: the scope first, then the number.
            let keywordToken = previous
            guard let scope = parseScope(calendar: keyword == "max_exec") else { return nil }
            guard check(.integer) else {
                error(expected: "a whole number before the scope")
                return nil
            }
            let number = advance()
            let value = IntLiteral(value: Lexer.integerValue(file, number.range), range: number.range)
            let fix = "\(text(number)) \(file.text(scope.range))"
            sink.error(
                Message.numberBeforeScope(text(keywordToken), fix), scope.range,
                fixIts: [FixIt(range: scope.range.lowerBound..<number.range.upperBound, replacement: fix)])
            return countClause(keyword, value, scope)
        }
        guard let value = parseIntLiteral() else { return nil }
        // `min_events 3 where plan == "pro"`: the `on` events' triggers whose properties pass.
        var filter: Expr?
        if keyword == "min_events", check(.identifier), current.range.count == 5, text(current) == "where" {
            let word = advance().range
            operators = 0
            let parsed = parseExpr()
            if case .invalid = parsed.kind { return nil }
            filter = parsed
            noteNewer(.properties, "'where'", at: word)
        }
        let scope: Scope
        if check(.kwPer) || check(.kwWithin) {
            guard let parsed = parseScope(calendar: keyword == "max_exec" && filter == nil) else { return nil }
            scope = parsed
        } else if check(.identifier), let misspelt = misspeltScopeKeyword() {
            // `max_exec 1 withn 1d`, `max_exec 1 pr session`: a misspelt scope keyword.
            let token = advance()
            sink.error(
                Message.unknown(.unknownScope, "scope keyword", text(token), [misspelt]), token.range,
                fixIts: [FixIt(range: token.range, replacement: misspelt)])
            let start = token.range.lowerBound
            if misspelt == "within" {
                guard let window = parseDurationLiteral() else { return nil }
                scope = Scope(.within(seconds: window.seconds), start..<window.range.upperBound)
            } else {
                guard let word = expect(.identifier, "'install', 'version' or 'session'") else { return nil }
                switch text(word) {
                case "version": scope = Scope(.version, start..<word.range.upperBound)
                case "session": scope = Scope(.session, start..<word.range.upperBound)
                default: scope = Scope(.install, start..<word.range.upperBound)
                }
            }
        } else {
            scope = Scope(.install, previous.range.upperBound..<previous.range.upperBound)
        }
        if let filter { return .minEventsWhere(value, filter, scope) }
        return countClause(keyword, value, scope)
    }

    func countClause(_ keyword: String, _ value: IntLiteral, _ scope: Scope) -> ClauseKind {
        switch keyword {
        case "min_events": return .minEvents(value, scope)
        case "max_events": return .maxEvents(value, scope)
        default: return .maxExec(value, scope)
        }
    }

    /// `per` or `within` when the identifier at hand is a misspelling of one and is followed
    /// by what that keyword takes (a duration; a scope name).
    func misspeltScopeKeyword() -> String? {
        let word = text(current)
        let next = peek()
        if next.kind == .duration || next.kind == .integer {
            return Suggestions.closest(to: word, in: ["within"], limit: 1).first
        }
        if next.kind == .identifier, ["install", "version", "session"].contains(text(next)) {
            return Suggestions.closest(to: word, in: ["per"], limit: 1).first
        }
        return nil
    }

    /// on_clause = "on" event { "," event }
    mutating func parseOnClause() -> ClauseKind? {
        var names: [Name] = []
        repeat {
            guard let name = parseEventName() else { return nil }
            names.append(name)
            if check(.comma), peek().kind == .identifier,
                [.integer, .duration, .identifier, .string].contains(peek(2).kind),
                ClauseKind.keywords.contains(text(peek()))
            {
                // `on launch, min_events 5`: the comma was meant to end the clause.
                let comma = advance()
                sink.error(
                    Message.missingSeparator, comma.range,
                    fixIts: [FixIt(range: comma.range, replacement: ";")])
                separatorReported = true
                return .on(names)
            }
        } while match(.comma)
        return .on(names)
    }

    /// after_clause = "after" OUTCOME ( DURATION | "next" ( "version" | "session" ) | "never" )
    mutating func parseAfterClause() -> ClauseKind? {
        guard let outcome = parseOutcomeName() else { return nil }
        if check(.duration) || check(.integer) {
            return parseDurationLiteral().map { .after(outcome, .duration($0)) }
        }
        guard let word = expect(.identifier, "how long it waits: a duration, 'next version', 'next session' or 'never'")
        else { return nil }
        switch text(word) {
        case "never": return .after(outcome, .never(word.range))
        case "next":
            guard let scope = expect(.identifier, "'version' or 'session' after 'next'") else { return nil }
            let range = word.range.lowerBound..<scope.range.upperBound
            switch text(scope) {
            case "version": return .after(outcome, .next(.version, range))
            case "session": return .after(outcome, .next(.session, range))
            default:
                let suggestions = Suggestions.closest(to: text(scope), in: ["version", "session"])
                sink.error(
                    Message.unknown(.unknownScope, "scope", text(scope), suggestions), scope.range,
                    fixIts: suggestions.prefix(1).map { FixIt(range: scope.range, replacement: $0) })
                return nil
            }
        default:
            let suggestions = Suggestions.closest(to: text(word), in: ["never", "next"])
            sink.error(
                Message.afterWait(text(word), suggestions), word.range,
                fixIts: suggestions.prefix(1).map { FixIt(range: word.range, replacement: $0) })
            return nil
        }
    }

    /// during_clause = [ "not" ] "during" HH:MM "-" HH:MM
    mutating func parseDuringClause(outside: Bool) -> ClauseKind? {
        guard check(.clockRange) else {
            let found = check(.clockTime) ? "one time ('\(text(current))')" : current.kind.description
            sink.error(Message.duringNeedsRange(found), current.range)
            if check(.clockTime) { advance() }
            return nil
        }
        let token = advance()
        let whole = text(token)
        guard let dash = whole.firstIndex(of: "-") else { return nil }
        let cut = token.range.lowerBound + whole.utf8.distance(from: whole.startIndex, to: dash)
        guard let from = clockTime(String(whole[..<dash]), cut: token.range.lowerBound..<cut, end: false),
            let to = clockTime(
                String(whole[whole.index(after: dash)...]), cut: cut + 1..<token.range.upperBound, end: true)
        else { return nil }
        return .during(from, to, outside: outside)
    }

    /// The time of day `text` (`H:MM` or `HH:MM`) at `range`; `24:00` only as an end.
    mutating func clockTime(_ text: String, cut range: SourceRange, end: Bool) -> ClockTime? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let h = Int(parts[0]), let m = Int(parts[1]),
            (0...23).contains(h) && (0...59).contains(m) || end && h == 24 && m == 0
        else {
            sink.error(Message.invalidClock(text), range)
            return nil
        }
        return ClockTime(minutes: h * 60 + m, range: range)
    }

    /// days_clause = "days" DAY { "," DAY }, each a day (`mon` ... `sun`), a range of days
    /// (`mon-fri`), `weekdays` or `weekend`.
    mutating func parseDaysClause() -> ClauseKind? {
        var names: [Name] = []
        repeat {
            if check(.dayRange) {
                let token = advance()
                names.append(Name(text(token), token.range))
                continue
            }
            guard let token = expect(.identifier, "a day of the week (\(Weekday.words.joined(separator: ", ")))")
            else { return nil }
            let word = text(token)
            guard Weekday.days(named: word) != nil else {
                let suggestions = Suggestions.closest(to: word, in: Weekday.words)
                sink.error(
                    Message.unknown(.invalidLocalTime, "day of the week", word, suggestions), token.range,
                    fixIts: suggestions.prefix(1).map { FixIt(range: token.range, replacement: $0) })
                return nil
            }
            names.append(Name(word, token.range))
        } while match(.comma)
        return .days(names)
    }

    /// One of a clause's fixed words (`after`, `visible`, `up`, `to`), an identifier spelled so.
    mutating func expectWord(_ word: String, _ what: @autoclosure () -> String) -> Token? {
        if check(.identifier) && text(current) == word { return advance() }
        error(expected: what())
        return nil
    }

    /// context_clause = [ "not" ] "in" IDENT { "," IDENT }
    mutating func parseContextList(outside: Bool) -> ClauseKind? {
        var names: [Name] = []
        repeat {
            guard let token = expect(.identifier, "a context's name (such as 'checkout')") else { return nil }
            names.append(Name(text(token), token.range))
        } while match(.comma)
        return .contexts(names, outside: outside)
    }

    /// A `YYYY-MM-DD` date after `keyword`.
    mutating func parseDate(_ keyword: String) -> CalendarDate? {
        guard check(.date) else {
            sink.error(Message.dateNeeded(keyword, current.kind.description), current.range)
            return nil
        }
        let token = advance()
        let whole = text(token)
        let parts = whole.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, CalendarDate.isValid(year: parts[0], month: parts[1], day: parts[2]) else {
            sink.error(Message.invalidDate(whole), token.range)
            return nil
        }
        return CalendarDate(year: parts[0], month: parts[1], day: parts[2], range: token.range)
    }

    /// An outcome's name (`accepted`, `declined`...), with did-you-mean for any other word.
    mutating func parseOutcomeName() -> Name? {
        guard let token = expect(.identifier, "an outcome (\(Outcome.names.joined(separator: ", ")))") else {
            return nil
        }
        let word = text(token)
        guard Outcome(rawValue: word) == nil else { return Name(word, token.range) }
        let suggestions = Suggestions.closest(to: word, in: Outcome.names)
        sink.error(
            Message.unknown(.unknownOutcome, "outcome", word, suggestions), token.range,
            fixIts: suggestions.prefix(1).map { FixIt(range: token.range, replacement: $0) })
        return nil
    }

    /// event = NAME | STRING. In a language 1.2 file, `crash` and `problem` name the engine's
    /// own streams (``EngineStream``).
    mutating func parseEventName() -> Name? {
        // `crash` and `problem`: five or seven bytes, so that other names make no string here.
        if builtinWords, check(.identifier), current.range.count == 5 || current.range.count == 7,
            let stream = EngineStream.builtin(text(current))
        {
            return Name(stream, advance().range)
        }
        if check(.string) {
            let token = advance()
            let name = Lexer.stringValue(file, token.range)
            // A quoted name is a name: the same length limit as an identifier.
            if name.utf8.count > Limits.maxNameLength {
                sink.error(Message.nameTooLong(name.utf8.count), token.range)
            }
            return Name(name, token.range)
        }
        return parseName("an event name")
    }

    /// scope = "per" ("install" | "version" | "session" | "day" | "week") | "within" DURATION;
    /// `per day` and `per week` (language 1.2) only where `calendar` (a `max_exec`).
    mutating func parseScope(calendar: Bool = false) -> Scope? {
        let start = current.range.lowerBound
        if match(.kwWithin) {
            guard let window = parseDurationLiteral() else { return nil }
            return Scope(.within(seconds: window.seconds), start..<window.range.upperBound)
        }
        advance()  // 'per'
        guard let token = expect(.identifier, "'install', 'version' or 'session' after 'per'") else { return nil }
        let word = text(token)
        let range = start..<token.range.upperBound
        switch word {
        case "install": return Scope(.install, range)
        case "version": return Scope(.version, range)
        case "session": return Scope(.session, range)
        case "day", "week":
            let window = word == "day" ? "1d" : "7d"
            guard calendar else {
                let fix = "within \(window)"
                sink.error(
                    Message.calendarScopeElsewhere(word, fix), range, fixIts: [FixIt(range: range, replacement: fix)])
                return Scope(.within(seconds: DurationText.seconds(window) ?? 0), range)
            }
            noteNewer(.calendarCaps, "'per \(word)'", at: range)
            return Scope(word == "day" ? .day : .week, range)
        default:
            let unit = word.hasSuffix("s") && word.count > 3 ? String(word.dropLast()) : word
            let windows = ["second": "1s", "minute": "1m", "hour": "1h", "day": "1d", "week": "1w"]
            if let window = windows[unit] {
                // `per day`: a day is a sliding window.
                let fix = "within \(window)"
                sink.error(
                    Message.scopeUnit(unit, fix), range, fixIts: [FixIt(range: range, replacement: fix)])
                return Scope(.within(seconds: DurationText.seconds(window) ?? 0), range)
            }
            if unit == "month" || unit == "year" {
                sink.error(Message.scopeUnit(unit, nil), range)
                return nil
            }
            let suggestions = Suggestions.closest(to: word, in: ["install", "version", "session"])
            sink.error(
                Message.unknown(.unknownScope, "scope", word, suggestions), token.range,
                fixIts: suggestions.prefix(1).map { FixIt(range: token.range, replacement: $0) })
            return nil
        }
    }

    mutating func parseIntLiteral() -> IntLiteral? {
        if check(.duration) {
            error(expected: "a whole number without a unit")
            return nil
        }
        guard let token = expect(.integer, "a whole number") else { return nil }
        return IntLiteral(value: Lexer.integerValue(file, token.range), range: token.range)
    }

    /// A duration. A bare integer is accepted with an error that suggests its spelling with units.
    mutating func parseDurationLiteral() -> DurationLiteral? {
        if check(.integer) {
            let token = advance()
            let seconds = Lexer.integerValue(file, token.range)
            // `14 days`, `2 weeks`: a unit word after the number.
            if check(.identifier), let unit = DurationText.unitWord(text(current)) {
                let word = advance()
                let range = token.range.lowerBound..<word.range.upperBound
                if let letter = unit.letter {
                    let fix = text(token).replacingAll("_", with: "") + letter
                    sink.error(
                        Message.unitWordApart(file.text(range), fix), range,
                        fixIts: [FixIt(range: range, replacement: fix)])
                } else {
                    sink.error(Message.noCalendarUnit(.bareDuration, file.text(range), unit), range)
                }
                return DurationLiteral(seconds: seconds, range: range)
            }
            if seconds != 0 { reportBareDuration(token.range, seconds) }
            return DurationLiteral(seconds: seconds, range: token.range)
        }
        guard let token = expect(.duration, "a duration (such as '2d' or '1d12h')") else { return nil }
        return DurationLiteral(seconds: Lexer.durationValue(file, token.range), range: token.range)
    }

    /// A bare number where a duration goes: a certain fix when it is a whole number of minutes
    /// (`604800` is `7d`), else the choices and no fix (`14` might be any unit).
    mutating func reportBareDuration(_ range: SourceRange, _ seconds: Int64) {
        let written = file.text(range)
        if seconds % 60 == 0 {
            let fix = DurationText.format(seconds)
            sink.error(
                Message.bareDuration(written, fix), range,
                fixIts: [FixIt(range: range, replacement: fix)])
        } else {
            sink.error(Message.bareDurationChoices(written.replacingAll("_", with: "")), range)
        }
    }
}
