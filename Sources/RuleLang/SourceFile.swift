/// A half-open range of UTF-8 byte offsets into a ``SourceFile``.
public typealias SourceRange = Range<Int>

/// A 1-based line and column; the column counts characters, not bytes.
public struct SourceLocation: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// 1-based line number.
    public var line: Int
    /// 1-based column, counted in characters (grapheme clusters).
    public var column: Int

    /// Line `line` and column `column`, both from 1.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "\(line):\(column)" }
}

/// One file of source text: its path, its bytes and where each line starts.
///
/// Positions elsewhere are byte offsets; lines and columns are computed only
/// when a diagnostic is rendered.
public final class SourceFile: Sendable {
    /// The path as the user gave it; used verbatim in diagnostics.
    public let path: String
    /// The raw bytes. They need not be valid UTF-8.
    public let bytes: [UInt8]
    /// The byte offset at which each line starts; `lineStarts[0] == 0`.
    public let lineStarts: [Int]

    /// A file at `path` holding `bytes` (any bytes: invalid UTF-8 is reported, never fatal).
    public init(path: String, bytes: [UInt8]) {
        self.path = path
        self.bytes = bytes
        var starts = [0]
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
            starts.append(index + 1)
        }
        self.lineStarts = starts
    }

    /// A file at `path` holding `text` as UTF-8.
    public convenience init(path: String, text: String) {
        self.init(path: path, bytes: Array(text.utf8))
    }

    /// Where the text starts: after a UTF-8 byte order mark, if the file has one.
    public var contentStart: Int {
        bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF ? 3 : 0
    }

    /// The text of `range`, with invalid UTF-8 replaced by U+FFFD.
    public func text(_ range: SourceRange) -> String {
        let clamped = range.clamped(to: 0..<bytes.count)
        return String(decoding: bytes[clamped], as: UTF8.self)
    }

    /// The 0-based index of the line that contains `offset`.
    public func lineIndex(of offset: Int) -> Int {
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if lineStarts[mid] <= offset { low = mid } else { high = mid - 1 }
        }
        return low
    }

    /// The line and column of a byte offset.
    public func location(of offset: Int) -> SourceLocation {
        let offset = min(max(offset, 0), bytes.count)
        let index = lineIndex(of: offset)
        let start = index == 0 ? min(contentStart, offset) : lineStarts[index]
        let prefix = bytes[start..<offset]
        // ASCII (the usual case) has one character per byte: no grapheme walk.
        let ascii = prefix.withUnsafeBytes { raw in raw.allSatisfy { $0 < 0x80 } }
        let column = ascii ? prefix.count : String(decoding: prefix, as: UTF8.self).count
        return SourceLocation(line: index + 1, column: column + 1)
    }

    /// The byte range of 1-based `line`, without its line terminator.
    public func lineRange(_ line: Int) -> SourceRange {
        let start = line == 1 ? contentStart : lineStarts[line - 1]
        var end = line < lineStarts.count ? lineStarts[line] - 1 : bytes.count
        if end > start, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        return start..<max(start, end)
    }
}
