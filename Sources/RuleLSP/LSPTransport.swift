import Foundation
import RuleLang

/// The Language Server Protocol's base protocol: JSON-RPC 2.0 messages, each framed by a
/// header block (`Content-Length: N`, other headers ignored) and a blank line.
public struct LSPFraming {
    /// What the bytes so far hold next.
    public enum Frame: Equatable {
        /// One message's body (JSON, not yet parsed).
        case message(Data)
        /// A header block without a usable `Content-Length`: skipped, reported as a parse error.
        case malformed(String)
    }

    /// The largest body accepted (64 MiB): a larger length is a malformed header, so that a
    /// bad length cannot make the server wait for, or hold, gigabytes.
    static let maximumBody = 64 << 20
    private var buffer: [UInt8] = []
    private var start = 0

    /// An empty buffer.
    public init() {}

    /// Adds bytes read from the client.
    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if start > 0 && start > buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, or nil until more bytes arrive.
    public mutating func next() -> Frame? {
        guard let end = headerEnd() else {
            // A header block is a few dozen bytes: 8 KiB without a blank line is not one.
            if buffer.count - start > 8_192 {
                start = buffer.count
                return .malformed("a header block without an end")
            }
            return nil
        }
        let header = String(decoding: buffer[start..<end], as: UTF8.self)
        var length: Int?
        for line in header.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }) {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "content-length"
            else { continue }
            length = Int(parts[1].trimmingCharacters(in: .whitespaces))
        }
        let bodyStart = end + 4
        guard let length, length >= 0, length <= LSPFraming.maximumBody else {
            start = bodyStart
            return .malformed("a header without a valid Content-Length")
        }
        guard buffer.count - bodyStart >= length else { return nil }
        start = bodyStart + length
        return .message(Data(buffer[bodyStart..<start]))
    }

    /// The offset of the `\r\n\r\n` that ends the header block, if it has arrived.
    private func headerEnd() -> Int? {
        var index = start
        while index + 3 < buffer.count {
            if buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
                return index
            }
            index += 1
        }
        return nil
    }

    /// `body` with its header, ready to write.
    public static func frame(_ body: Data) -> Data {
        var out = Data("Content-Length: \(body.count)\r\n\r\n".utf8)
        out.append(body)
        return out
    }
}

/// JSON values as Foundation's `JSONSerialization` reads and writes them.
typealias JSONObject = [String: Any]

/// JSON text already written (a long list of locations), put in a message as it is.
struct RawJSON {
    var bytes: [UInt8]
}

enum JSON {
    /// `value` as JSON text (keys sorted, so that output is stable; `/` not escaped). Written
    /// here rather than by `JSONSerialization`, which bridges every value through Foundation's
    /// classes: a reference answer of 300,000 locations took it 9 s of a 10 s request
    /// (`rulebench lsp`, lsp_references_rename_300k_ms).
    static func data(_ value: Any) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out)
        return Data(out)
    }

    /// Writes `value`: a string, a Swift or Foundation number or Boolean, `NSNull`, a
    /// dictionary with string keys, an array, or an optional (nil is `null`); anything else is
    /// `null`, as is a number that is not finite.
    static func write(_ value: Any, into out: inout [UInt8]) {
        switch value {
        case let raw as RawJSON:
            out += raw.bytes
        case let string as String:
            write(string: string, into: &out)
        case let object as [String: Any]:
            out.append(UInt8(ascii: "{"))
            for (k, key) in object.keys.sorted().enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                write(string: key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(object[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        case let array as [Any]:
            out.append(UInt8(ascii: "["))
            for (k, element) in array.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case is NSNull:
            out += Array("null".utf8)
        default:
            writeScalar(value, into: &out)
        }
    }

    private static func writeScalar(_ value: Any, into out: inout [UInt8]) {
        let type = Swift.type(of: value)
        if type == Bool.self, let bool = value as? Bool {
            out += Array((bool ? "true" : "false").utf8)
        } else if type == Int.self, let int = value as? Int {
            write(int: int, into: &out)
        } else if type == Double.self, let double = value as? Double {
            out += Array((double.isFinite ? "\(double)" : "null").utf8)
        } else if let number = value as? NSNumber {
            // A number parsed from a message (an id echoed back): Boolean, floating or whole.
            switch String(cString: number.objCType) {
            case "c": out += Array((number.boolValue ? "true" : "false").utf8)
            case "d", "f": out += Array((number.doubleValue.isFinite ? "\(number.doubleValue)" : "null").utf8)
            default: out += Array(String(number.int64Value).utf8)
            }
        } else if let int = value as? any BinaryInteger {
            out += Array(String(int).utf8)
        } else if Mirror(reflecting: value).displayStyle == .optional {
            if let wrapped = Mirror(reflecting: value).children.first?.value {
                write(wrapped, into: &out)
            } else {
                out += Array("null".utf8)
            }
        } else {
            out += Array("null".utf8)
        }
    }

    /// A whole number's digits, written in place (no string made).
    static func write(int value: Int, into out: inout [UInt8]) {
        guard value >= 0 else {
            out += Array(String(value).utf8)
            return
        }
        var count = 1
        var rest = value / 10
        while rest > 0 {
            count += 1
            rest /= 10
        }
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        var index = out.count - 1
        rest = value
        repeat {
            out[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
            index -= 1
        } while rest > 0
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\n`, `\r`, `\t` or `\u00XX`.
    static func write(string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The JSON value of `data`, or nil when it is not JSON.
    static func parse(_ data: Data) -> Any? {
        try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
    }

    /// An integer of a parsed message, or nil.
    static func int(_ value: Any?) -> Int? {
        if let int = value as? Int { return int }
        guard let double = value as? Double, double == double.rounded(), abs(double) < 9e15 else { return nil }
        return Int(double)
    }
}

/// Positions as the protocol counts them (0-based lines, UTF-16 code units in a line) and
/// byte offsets into a ``SourceFile``.
enum LSPPosition {
    /// The byte offset of `line`/`character`; past the end of a line, the line's end; past the
    /// last line, the end of the file.
    static func offset(in file: SourceFile, line: Int, character: Int) -> Int {
        guard line >= 0 else { return 0 }
        guard line < file.lineStarts.count else { return file.bytes.count }
        let range = file.lineRange(line + 1)
        // Line 1 starts after a byte order mark, which is not text the editor shows.
        var offset = range.lowerBound
        var units = 0
        while offset < range.upperBound && units < character {
            let (length, width) = scalar(at: offset, in: file.bytes)
            if units + width > character { break }
            units += width
            offset += length
        }
        return offset
    }

    /// The protocol position of byte `offset`.
    static func position(in file: SourceFile, offset: Int) -> JSONObject {
        let offset = min(max(offset, 0), file.bytes.count)
        let line = file.lineIndex(of: offset)
        var index = line == 0 ? file.contentStart : file.lineStarts[line]
        index = min(index, offset)
        var units = 0
        while index < offset {
            let (length, width) = scalar(at: index, in: file.bytes)
            units += width
            index += length
        }
        return ["line": line, "character": units]
    }

    /// The protocol position of each offset, in one sweep over the offsets in order: linear in
    /// the file's size plus the offsets' number (``position(in:offset:)`` counts from the line's
    /// start each time, so many names on one line would cost the square).
    static func positions(in file: SourceFile, _ unclamped: [Int]) -> [(line: Int, character: Int)] {
        let offsets = unclamped.map { min(max($0, 0), file.bytes.count) }
        let order = offsets.indices.sorted { offsets[$0] < offsets[$1] }
        var positions = [(line: Int, character: Int)](repeating: (0, 0), count: offsets.count)
        var line = -1
        var index = 0
        var units = 0
        for k in order {
            let offset = offsets[k]
            let target = file.lineIndex(of: offset)
            if target != line {
                line = target
                index = line == 0 ? file.contentStart : file.lineStarts[line]
                units = 0
            }
            // Before line 1's content (inside a byte order mark): character 0, as position(in:offset:).
            while index < offset {
                let (length, width) = scalar(at: index, in: file.bytes)
                units += width
                index += length
            }
            positions[k] = (line, units)
        }
        return positions
    }

    /// The protocol range of a byte range.
    static func range(in file: SourceFile, _ range: SourceRange) -> JSONObject {
        ["start": position(in: file, offset: range.lowerBound), "end": position(in: file, offset: range.upperBound)]
    }

    /// The byte range of a protocol range, or nil when it is not one.
    static func byteRange(in file: SourceFile, _ value: Any?) -> SourceRange? {
        guard let range = value as? JSONObject, let start = range["start"] as? JSONObject,
            let end = range["end"] as? JSONObject, let from = offset(in: file, start), let to = offset(in: file, end)
        else { return nil }
        return min(from, to)..<max(from, to)
    }

    /// The byte offset of a protocol position object, or nil when it is not one.
    static func offset(in file: SourceFile, _ value: Any?) -> Int? {
        guard let position = value as? JSONObject, let line = JSON.int(position["line"]),
            let character = JSON.int(position["character"])
        else { return nil }
        return offset(in: file, line: line, character: character)
    }

    /// The UTF-8 length of the scalar at `offset` and its width in UTF-16 code units (an
    /// invalid byte counts as one unit, as a decoder's U+FFFD does).
    private static func scalar(at offset: Int, in bytes: [UInt8]) -> (length: Int, width: Int) {
        let lead = bytes[offset]
        let length: Int
        switch lead {
        case 0..<0x80: return (1, 1)
        case 0xC2..<0xE0: length = 2
        case 0xE0..<0xF0: length = 3
        case 0xF0..<0xF5: length = 4
        default: return (1, 1)
        }
        guard offset + length <= bytes.count,
            bytes[(offset + 1)..<(offset + length)].allSatisfy({ $0 & 0xC0 == 0x80 })
        else { return (1, 1) }
        return (length, length == 4 ? 2 : 1)
    }
}
