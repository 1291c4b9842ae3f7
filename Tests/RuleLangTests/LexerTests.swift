import XCTest

@testable import RuleLang

final class LexerTests: XCTestCase {
    private func lex(_ text: String) -> ([Token], [Diagnostic]) {
        let file = SourceFile(path: "t.rules", text: text)
        var sink = DiagnosticSink(file: file)
        var lexer = Lexer(file: file)
        return (lexer.tokenize(into: &sink), sink.diagnostics)
    }

    func testCardLineTokens() {
        let (tokens, diagnostics) = lex(
            "scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >")
        XCTAssertTrue(diagnostics.isEmpty)
        XCTAssertEqual(
            tokens,
            [
                Token(.kwScenario, 0..<8), Token(.identifier, 9..<23), Token(.less, 24..<25),
                Token(.identifier, 26..<36), Token(.integer, 37..<38), Token(.semicolon, 38..<39),
                Token(.identifier, 40..<51), Token(.duration, 52..<54), Token(.semicolon, 54..<55),
                Token(.identifier, 56..<64), Token(.integer, 65..<66), Token(.semicolon, 66..<67),
                Token(.identifier, 68..<75), Token(.duration, 76..<78), Token(.greater, 79..<80),
                Token(.eof, 80..<80),
            ])
    }

    func testOperatorsCommentsAndStrings() {
        let (tokens, diagnostics) = lex("# c\n<= >= == != = : , ( ) { } // x\n\"a\\\"b\" 1_000 1d12h")
        XCTAssertTrue(diagnostics.isEmpty)
        XCTAssertEqual(
            tokens.map(\.kind),
            [
                .lessEqual, .greaterEqual, .equalEqual, .bangEqual, .equal, .colon, .comma, .leftParen,
                .rightParen, .leftBrace, .rightBrace, .string, .integer, .duration, .eof,
            ])
        let file = SourceFile(path: "t", text: "\"a\\\"b\\\\\"")
        XCTAssertEqual(Lexer.stringValue(file, 0..<file.bytes.count), "a\"b\\")
    }

    func testDurationValues() {
        XCTAssertEqual(DurationText.seconds("1d12h"), 129_600)
        XCTAssertEqual(DurationText.seconds("90m"), 5_400)
        XCTAssertEqual(DurationText.seconds("2w"), 1_209_600)
        XCTAssertEqual(DurationText.seconds("0"), 0)
        XCTAssertNil(DurationText.seconds("5"))
        XCTAssertNil(DurationText.seconds("1d2"))
        XCTAssertEqual(DurationText.format(604_800), "7d")
        XCTAssertEqual(DurationText.format(90), "1m30s")
        XCTAssertEqual(DurationText.human(100_800), "1d 4h")
    }

    func testMalformedInputIsReportedWithPositions() {
        let (tokens, diagnostics) = lex("5days @ \"open\n99999999999999999999")
        XCTAssertEqual(tokens.map(\.kind), [.invalid, .invalid, .invalid, .invalid, .eof])
        XCTAssertEqual(
            diagnostics.map(\.id), [.invalidDuration, .invalidCharacter, .unterminatedString, .integerOverflow])
        XCTAssertEqual(diagnostics.map { "\($0.location)" }, ["1:1", "1:7", "1:9", "2:1"])
    }

    func testInvalidUTF8RunIsOneDiagnostic() {
        let file = SourceFile(path: "t", bytes: [0xFF, 0xFE, 0x20, 0x41])
        var sink = DiagnosticSink(file: file)
        var lexer = Lexer(file: file)
        let tokens = lexer.tokenize(into: &sink)
        XCTAssertEqual(tokens.map(\.kind), [.invalid, .identifier, .eof])
        XCTAssertEqual(sink.diagnostics.map(\.message), ["invalid UTF-8 byte 0xFF"])
    }

    func testLeadingByteOrderMarkIsSkipped() {
        let file = SourceFile(path: "t", bytes: [0xEF, 0xBB, 0xBF] + Array("scenario A < >".utf8))
        XCTAssertTrue(RuleCompiler.check([file]).diagnostics.isEmpty)
        let bad = SourceFile(path: "t", bytes: [0xEF, 0xBB, 0xBF] + Array("scenario A < bogus 1 >".utf8))
        let diagnostic = RuleCompiler.check([bad]).diagnostics[0]
        XCTAssertEqual(diagnostic.location, SourceLocation(line: 1, column: 14), "columns ignore the mark")
        let rendered = DiagnosticRenderer().render(diagnostic)
        XCTAssertTrue(rendered.contains(" 1 | scenario A < bogus 1 >\n   |              ^~~~~"), rendered)
    }

    func testColumnsCountCharactersNotBytes() {
        let file = SourceFile(path: "t", text: "# é\n\"été\" @")
        let offset = Array(file.bytes).lastIndex(of: UInt8(ascii: "@"))!
        XCTAssertEqual(file.location(of: offset), SourceLocation(line: 2, column: 7))
    }
}
