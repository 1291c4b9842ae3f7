import RuleLang
import XCTest

/// Every common mistake lands on the fix a person needs: one diagnostic per mistake, at the
/// offending token, with a fix-it only where the fix is certain.
final class AuthoringDiagnosticsTests: XCTestCase {
    /// `line:col: severity: message [fix: SUMMARY]...` for each diagnostic.
    private func lines(_ text: String) -> [String] {
        RuleCompiler.check(text: text, path: "t.rules").diagnostics.map { diagnostic in
            "\(diagnostic.location): \(diagnostic.severity.rawValue): \(diagnostic.message)"
                + diagnostic.fixIts.map { " [fix: \($0.summary(in: diagnostic.file))]" }.joined()
        }
    }

    func testTable() {
        let cases: [(String, [String])] = [
            // Bare numbers: the choices when the unit is a guess; the certain fix otherwise.
            (
                "scenario A < since_first 14 >",
                ["1:26: error: a duration needs a unit: '14s', '14m', '14h', '14d' or '14w'?"]
            ),
            (
                "scenario A < since_first 604800 >",
                ["1:26: error: a duration needs a unit; '604800' seconds is '7d' [fix: replace '604800' with '7d']"]
            ),
            (
                "scenario A < between 120 >",
                ["1:22: error: a duration needs a unit; '120' seconds is '2m' [fix: replace '120' with '2m']"]
            ),
            // Unit words.
            (
                "scenario A < since_first 14 days >",
                [
                    "1:26: error: a duration is written with a one-letter unit and no space; '14 days' is '14d' "
                        + "[fix: replace '14 days' with '14d']"
                ]
            ),
            (
                "scenario A < between 1 minute >",
                [
                    "1:22: error: a duration is written with a one-letter unit and no space; '1 minute' is '1m' "
                        + "[fix: replace '1 minute' with '1m']"
                ]
            ),
            (
                "scenario A < between 30min >",
                [
                    "1:22: error: a duration's unit is one letter (s, m, h, d, w); '30min' is '30m' "
                        + "[fix: replace '30min' with '30m']"
                ]
            ),
            (
                "scenario A < between 10secs >",
                [
                    "1:22: error: a duration's unit is one letter (s, m, h, d, w); '10secs' is '10s' "
                        + "[fix: replace '10secs' with '10s']"
                ]
            ),
            (
                "scenario A < between 1mo >",
                [
                    "1:22: error: there is no month unit in '1mo', because months differ in length; use '30d' or '4w'"
                ]
            ),
            (
                "scenario A < between 2 years >",
                [
                    "1:22: error: there is no year unit in '2 years', because years differ in length; use days, as in '365d'"
                ]
            ),
            // Fractions.
            (
                "scenario A < between 1.5d >",
                ["1:22: error: durations are whole units; '1.5d' is '1d12h' [fix: replace '1.5d' with '1d12h']"]
            ),
            (
                "scenario A < between 0.25h >",
                ["1:22: error: durations are whole units; '0.25h' is '15m' [fix: replace '0.25h' with '15m']"]
            ),
            // Other languages' operators, and '='.
            (
                "param a: bool\nparam b: bool\nscenario A < when a && b >",
                ["3:21: error: '&&' is written 'and' in rules [fix: replace '&&' with 'and']"]
            ),
            (
                "param a: bool\nparam b: bool\nscenario A < when a || b >",
                ["3:21: error: '||' is written 'or' in rules [fix: replace '||' with 'or']"]
            ),
            (
                "param b: bool\nscenario A < when !b >",
                ["2:19: error: '!' is written 'not' in rules [fix: replace '!' with 'not ']"]
            ),
            (
                "param is_premium: bool\nscenario A < when is_premium = false >",
                ["2:30: error: use '==' to compare; '=' only gives a param its default [fix: replace '=' with '==']"]
            ),
            // Scopes.
            (
                "scenario A < min_events 1 per day >",
                [
                    "1:27: error: 'per day' caps executions on the local calendar: only 'max_exec' takes it; "
                        + "a sliding day is 'within 1d' [fix: replace 'per day' with 'within 1d']"
                ]
            ),
            (
                "scenario A < max_exec 1 per month >",
                [
                    "1:25: error: there is no 'per month'; months differ in length: use a window such as "
                        + "'within 30d' or 'within 4w'"
                ]
            ),
            (
                "scenario A < max_exec per version 1 >",
                [
                    "1:23: error: the number comes before the scope: 'max_exec 1 per version' "
                        + "[fix: replace 'per version 1' with '1 per version']"
                ]
            ),
            (
                "scenario A < max_exec 1 withn 1d >",
                [
                    "1:25: error: unknown scope keyword 'withn'; did you mean 'within'? "
                        + "[fix: replace 'withn' with 'within']"
                ]
            ),
            (
                "scenario A < max_exec 1 per versoin >",
                [
                    "1:29: error: unknown scope 'versoin'; did you mean 'version' or 'session'? "
                        + "[fix: replace 'versoin' with 'version']"
                ]
            ),
            // Names and numbers.
            (
                "scenario A < on episode-played >",
                [
                    "1:17: error: a name holding '-' or '.' must be quoted: '\"episode-played\"' "
                        + "[fix: replace 'episode-played' with '\"episode-played\"']"
                ]
            ),
            (
                "scenario A < on episode.played >",
                [
                    "1:17: error: a name holding '-' or '.' must be quoted: '\"episode.played\"' "
                        + "[fix: replace 'episode.played' with '\"episode.played\"']"
                ]
            ),
            (
                "scenario A < priority -1 >",
                [
                    "1:23: error: '-1' is negative; counts, thresholds and priorities are whole numbers from 0 "
                        + "(the highest priority wins: use 0 for the lowest)"
                ]
            ),
            // Conditions.
            (
                "param is_premium: bool\nscenario B < is_premium == false >",
                ["2:14: error: a condition needs 'when': 'when CONDITION' [fix: insert 'when ']"]
            ),
            (
                "param is_premium: bool\nscenario B < not is_premium >",
                ["2:14: error: a condition needs 'when': 'when CONDITION' [fix: insert 'when ']"]
            ),
            (
                "param plan: string\nscenario A < when plan == free >",
                [
                    "2:27: error: strings are quoted: '\"free\"'; a bare word names a param [fix: replace 'free' with '\"free\"']"
                ]
            ),
            (
                "param plan: string\nscenario A < when free != plan >",
                [
                    "2:19: error: strings are quoted: '\"free\"'; a bare word names a param [fix: replace 'free' with '\"free\"']"
                ]
            ),
            ("scenario A < when days_since_install() >", ["1:19: error: unknown function 'days_since_install'"]),
            ("scenario A < when nope(3) >", ["1:19: error: unknown function 'nope'"]),
            (
                "scenario A < when cont(launch, 3) >",
                ["1:19: error: unknown function 'cont'; did you mean 'count'? [fix: replace 'cont' with 'count']"]
            ),
            // Bodies and declarations.
            (
                "scenario X { on launch }",
                [
                    "1:12: error: a body is written between '<' and '>'; braces hold a group's scenarios "
                        + "[fix: replace '{' with '<'] [fix: replace '}' with '>']"
                ]
            ),
            (
                "Scenario X < >",
                [
                    "1:1: error: keywords are lowercase: 'scenario', not 'Scenario' [fix: replace 'Scenario' with 'scenario']"
                ]
            ),
            (
                "PARAM p: bool\nscenario X < when p >",
                ["1:1: error: keywords are lowercase: 'param', not 'PARAM' [fix: replace 'PARAM' with 'param']"]
            ),
            (
                "scenario A < min_events 5 on launch >",
                ["1:27: error: clauses are separated by ';' [fix: insert ';']"]
            ),
            (
                "scenario A < on launch min_events 5 >",
                ["1:24: error: clauses are separated by ';' [fix: insert ';']"]
            ),
            (
                "scenario A < on launch, min_events 5 >",
                ["1:23: error: clauses are separated by ';' [fix: replace ',' with ';']"]
            ),
            ("scenario A < max_exec 1 >;", ["1:26: warning: no ';' is needed after a body [fix: remove ';']"]),
            (
                "scenario A < since_last shared 4d >",
                [
                    "1:25: error: 'since_last' takes a duration (the scenario's own events); to test another event "
                        + "use 'when since_last(shared) >= 4d' "
                        + "[fix: replace 'since_last shared 4d' with 'when since_last(shared) >= 4d']"
                ]
            ),
            // Impossible across scopes, both clauses located (the note is the second line).
            (
                "scenario A < min_events 3 within 1d; max_events 2 within 2d >",
                [
                    "1:14: error: 'min_events 3 within 1d' and 'max_events 2 within 2d' can never both hold: "
                        + "the events within 1d are among those within 2d; the scenario never runs"
                ]
            ),
            (
                "scenario A < min_events 3 per session; max_events 2 per version >",
                [
                    "1:14: error: 'min_events 3 per session' and 'max_events 2 per version' can never both hold: "
                        + "the events per session are among those per version; the scenario never runs"
                ]
            ),
            (
                "scenario A < max_events 4 per install; min_events 5 per session >",
                [
                    "1:40: error: 'min_events 5 per session' and 'max_events 4' can never both hold: "
                        + "the events per session are among those per install; the scenario never runs"
                ]
            ),
            (
                "scenario A < since_first 7d; max_events 0 >",
                [
                    "1:14: error: 'since_first 7d' needs an event, and 'max_events 0' allows none; the scenario never runs"
                ]
            ),
            ("scenario A < max_exec 0 within 1d >", ["1:14: warning: 'max_exec 0' means the scenario never runs"]),
            (
                "scenario A < since_first 7d; since_first 14d >",
                ["1:30: warning: two 'since_first' clauses: only the larger, '14d', matters"]
            ),
            (
                "scenario A < between 2d; between 1d >",
                ["1:26: warning: two 'between' clauses: only the larger, '2d', matters"]
            ),
            // Possible: a wider minimum than a narrower maximum, scopes that do not nest.
            ("scenario A < min_events 3 within 2d; max_events 2 within 1d >", []),
            ("scenario A < min_events 2 per session; max_events 0 within 1d >", []),
            ("scenario A < since_first 7d; max_events 0 per session >", []),
            // Not mistakes: a stream named like a clause keyword inside a list, `event` as a stream.
            ("scenario A < on launch, min_events >", []),
            ("scenario A < when count(event) == 0 >", []),
        ]
        for (source, expected) in cases {
            XCTAssertEqual(lines(source), expected, source)
        }
        // The impossible combinations name the other clause in a located note.
        let notes = RuleCompiler.check(text: "scenario A < min_events 3 within 1d; max_events 2 within 2d >")
            .diagnostics.first?.notes
        XCTAssertEqual(notes?.first?.message, "the maximum is here")
        XCTAssertEqual(notes?.first?.span?.start.column, 38)
    }
}
