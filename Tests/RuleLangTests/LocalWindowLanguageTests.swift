import RuleTools
import XCTest

@testable import RuleLang

/// Language 1.2's local windows in the front end: lexed, parsed, checked, printed, formatted,
/// version-gated, and bad input located.
final class LocalWindowLanguageTests: XCTestCase {
    let header = "# language 1.2\n"

    func check(_ text: String) -> CheckResult { RuleCompiler.check(text: text) }

    func testTheFormsParseAndPrint() {
        let result = check(
            header + """
                scenario A < not during 22:00-8:00; during 9:05-24:00; days sat, weekdays; from 2026-12-01; until 2026-12-24 >
                group G < max_exec 1 within 1d; during 08:00-22:00; days weekend > { scenario B < > }
                """)
        XCTAssertEqual(result.diagnostics.map(\.message), [])
        XCTAssertEqual(
            result.program.scenarios[0].decl.clauses.map { Printer.clause($0.kind) },
            [
                "not during 22:00-08:00", "during 09:05-24:00", "days sat, weekdays", "from 2026-12-01",
                "until 2026-12-24",
            ])
        guard case .during(let from, let to, let outside) = result.program.scenarios[0].decl.clauses[0].kind else {
            return XCTFail("during")
        }
        XCTAssertEqual([from.minutes, to.minutes], [1_320, 480])
        XCTAssertTrue(outside)
        guard case .from(let date) = result.program.scenarios[0].decl.clauses[3].kind else { return XCTFail("from") }
        XCTAssertEqual(date.dayNumber, 20_788, "2026-12-01 is day 20,788 from 1970-01-01")
    }

    func testTheLexerReadsTimesRangesAndDatesWhole() {
        let file = SourceFile(path: "t", text: "22:00-08:00 9:30 2026-12-01 10:00x 2026-1-01")
        var sink = DiagnosticSink(file: file)
        var lexer = Lexer(file: file)
        let tokens = lexer.tokenize(into: &sink)
        XCTAssertEqual(
            Array(tokens.prefix(3)), [Token(.clockRange, 0..<11), Token(.clockTime, 12..<16), Token(.date, 17..<27)])
        XCTAssertFalse(tokens.dropFirst(3).contains { $0.kind == .clockTime || $0.kind == .date }, "10:00x, 2026-1-01")
    }

    func testEachFormNeedsLanguage12() {
        for body in ["during 09:00-17:00", "not during 22:00-08:00", "days sat", "from 2026-12-01", "until 2026-12-24"]
        {
            let result = check("# language 1.1\nscenario A < \(body) >\n")
            XCTAssertEqual(result.diagnostics.map(\.id), [.languageVersion], body)
        }
    }

    func testBadInputIsLocated() {
        func only(_ body: String) -> Diagnostic? {
            let diagnostics = check(header + "scenario A < \(body) >\n").diagnostics
            XCTAssertEqual(diagnostics.count, 1, "\(body): \(diagnostics.map(\.message))")
            return diagnostics.first
        }
        let hour = only("during 24:30-08:00")
        XCTAssertEqual(hour?.id, .invalidLocalTime)
        XCTAssertEqual(hour.map { $0.range.lowerBound - header.utf8.count }, 20, "at the bad time")
        XCTAssertEqual(only("during 22:00-07:60")?.id, .invalidLocalTime)
        XCTAssertEqual(only("during 24:00-08:00")?.id, .invalidLocalTime, "24:00 ends a window only")
        XCTAssertEqual(only("during 09:00")?.message.contains("one time ('09:00')"), true)
        XCTAssertEqual(only("during 10:00-10:00")?.id, .impossibleScenario)
        XCTAssertEqual(only("during 00:00-24:00")?.id, .impossibleScenario, "the whole day is no window")
        let day = only("days satt")
        XCTAssertEqual(day?.message, "unknown day of the week 'satt'; did you mean 'sat'?")
        XCTAssertEqual(day?.fixIts.first?.replacement, "sat")
        XCTAssertEqual(only("from 2027-02-29")?.id, .invalidLocalTime, "2027 is no leap year")
        XCTAssertEqual(check(header + "scenario A < from 2028-02-29 >\n").diagnostics.map(\.message), [])
        let notADate = check(header + "scenario A < until 12-24 >\n").diagnostics.first
        XCTAssertEqual(notADate?.message, "'until' takes a local date such as 2026-12-01, not integer")
        XCTAssertEqual(only("from 2026-12-25; until 2026-12-24")?.id, .impossibleScenario)
        XCTAssertEqual(only("days sat; days weekdays")?.id, .impossibleScenario)
        XCTAssertEqual(only("days sat; days weekdays; days mon")?.id, .impossibleScenario, "reported once")
        XCTAssertEqual(only("during 09:00-17:00; during 09:00-17:00")?.id, .duplicateClause)
    }

    func testDatesAndWeekdaysAgreeWithTheirDefinitions() {
        // Day numbers round-trip over 3,000 years, and consecutive days differ by one.
        var previous: Int64?
        for year in stride(from: -500, through: 2_500, by: 7) {
            for (month, day) in [(1, 1), (2, 28), (3, 1), (12, 31)] {
                let n = CalendarDate.dayNumber(year: year, month: month, day: day)
                let back = CalendarDate.civil(dayNumber: n)
                XCTAssertEqual([back.year, back.month, back.day], [year, month, day])
                if month == 3, let previous { XCTAssertGreaterThan(n, previous) }
                if month == 3 {
                    let leap = CalendarDate.isValid(year: year, month: 2, day: 29)
                    XCTAssertEqual(n - CalendarDate.dayNumber(year: year, month: 2, day: 28), leap ? 2 : 1)
                }
            }
            previous = CalendarDate.dayNumber(year: year, month: 3, day: 1)
        }
        XCTAssertEqual(CalendarDate.dayNumber(year: 1970, month: 1, day: 1), 0)
        XCTAssertEqual(Weekday.of(dayNumber: 0), .thursday)
        XCTAssertEqual(Weekday.of(dayNumber: -1), .wednesday)
        XCTAssertEqual(Weekday.of(dayNumber: CalendarDate.dayNumber(year: 2026, month: 11, day: 27)), .friday)
    }

    /// `days mon-fri`: the days from the first through the second, across Sunday when the
    /// second comes first; a range is a day word of `days` only, a name elsewhere (quoted).
    func testARangeOfDaysNamesEachDayFromTheFirstThroughTheSecond() {
        let names = Weekday.names
        for from in 0..<7 {
            for through in 0..<7 {
                // The model: walk from the first day, a day at a time, until the second.
                var expected = [from]
                while expected.last! != through { expected.append((expected.last! + 1) % 7) }
                let word = names[from] + "-" + names[through]
                XCTAssertEqual(Weekday.days(named: word)?.map(\.rawValue), expected, word)
                let result = check(header + "scenario A < days \(word), sun >\n")
                XCTAssertEqual(result.diagnostics.map(\.message), [], word)
                XCTAssertEqual(
                    result.program.scenarios.first.map { Printer.clause($0.decl.clauses[0].kind) }, "days \(word), sun")
            }
        }
        XCTAssertEqual(Weekday.mask([Name("fri-mon", 0..<7)]), 0b111_0001, "Friday to Monday")
        XCTAssertNil(Weekday.days(named: "mon-xyz"))
        // Elsewhere, a name with a `-`, quoted as any other.
        let event = check(header + "scenario A < on mon-fri >\n").diagnostics
        XCTAssertEqual(event.map(\.message), ["a name holding '-' or '.' must be quoted: '\"mon-fri\"'"])
        XCTAssertEqual(event.first?.fixIts.first?.replacement, "\"mon-fri\"")
        XCTAssertEqual(check("scenario A < on \"mon-fri\" >\n").diagnostics.map(\.message), [])
        XCTAssertEqual(
            check("# language 1.1\nscenario A < days mon-fri >\n").diagnostics.map(\.id), [.languageVersion])
        XCTAssertEqual(
            check(header + "scenario A < days sat-sun; days mon-fri >\n").diagnostics.map(\.id),
            [
                .impossibleScenario
            ])
    }

    func testTheFormatterKeepsTheForms() {
        let source = SourceFile(
            path: "t.rules", text: header + "scenario A <not during 22:00-8:00;days sat,sun;from 2026-12-01>\n")
        XCTAssertEqual(
            Formatter.format(source).text,
            header + "scenario A < not during 22:00-08:00; days sat, sun; from 2026-12-01 >\n")
    }
}
