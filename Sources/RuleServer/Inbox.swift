import Foundation
import RuleRuntime

/// An event's properties as bytes, for `rules_inbox.properties`: for each property, sorted by
/// name, its name's length (4 bytes, big-endian) and bytes, a tag (`i`, `s`, `b`) and the value
/// (`i`: 8 bytes, big-endian; `s`: a length and the bytes; `b`: one byte).
enum PropertyCoding {
    struct Malformed: Error, CustomStringConvertible {
        var description: String { "an inbox event's properties are not in the library's format" }
    }

    static func encode(_ properties: [String: PropertyValue]) -> [UInt8] {
        var out: [UInt8] = []
        func length(_ n: Int) { out += bigEndianBytes(Int64(n)).suffix(4) }
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            length(name.utf8.count)
            out += Array(name.utf8)
            switch value {
            case .int(let n):
                out.append(UInt8(ascii: "i"))
                out += bigEndianBytes(n)
            case .string(let text):
                out.append(UInt8(ascii: "s"))
                length(text.utf8.count)
                out += Array(text.utf8)
            case .bool(let flag):
                out.append(UInt8(ascii: "b"))
                out.append(flag ? 1 : 0)
            }
        }
        return out
    }

    static func decode(_ bytes: [UInt8]) throws -> [String: PropertyValue] {
        var at = 0
        func take(_ n: Int) throws -> ArraySlice<UInt8> {
            guard n >= 0, at + n <= bytes.count else { throw Malformed() }
            defer { at += n }
            return bytes[at..<at + n]
        }
        func length() throws -> Int { Int(try take(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) }
        var properties: [String: PropertyValue] = [:]
        while at < bytes.count {
            let name = String(decoding: try take(length()), as: UTF8.self)
            switch try take(1).first {
            case UInt8(ascii: "i"): properties[name] = .int(Int64(bitPattern: bigEndian(Array(try take(8)))))
            case UInt8(ascii: "s"): properties[name] = .string(String(decoding: try take(length()), as: UTF8.self))
            case UInt8(ascii: "b"): properties[name] = .bool(try take(1).first == 1)
            default: throw Malformed()
            }
        }
        return properties
    }
}

/// Rows in `COPY`'s text format: columns split by tabs, rows ended by newlines, `\N` for NULL,
/// and a backslash, tab, newline or carriage return inside a value escaped.
package struct CopyText {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    package mutating func text(_ value: String, last: Bool = false) {
        for byte in value.utf8 {
            switch byte {
            case 92: bytes += [92, 92]
            case 9: bytes += [92, UInt8(ascii: "t")]
            case 10: bytes += [92, UInt8(ascii: "n")]
            case 13: bytes += [92, UInt8(ascii: "r")]
            default: bytes.append(byte)
            }
        }
        bytes.append(last ? 10 : 9)
    }

    /// A bytea value (`\\x` and hex digits), or NULL.
    package mutating func bytea(_ value: [UInt8]?, last: Bool = false) {
        if let value {
            let digits = Array("0123456789abcdef".utf8)
            bytes += [92, 92, UInt8(ascii: "x")]
            for byte in value {
                bytes.append(digits[Int(byte >> 4)])
                bytes.append(digits[Int(byte & 15)])
            }
        } else {
            bytes += [92, UInt8(ascii: "N")]
        }
        bytes.append(last ? 10 : 9)
    }

    /// A double, exactly (17 significant digits round-trip).
    mutating func double(_ value: Double, last: Bool = false) {
        bytes += Array(String(format: "%.17g", value).utf8)
        bytes.append(last ? 10 : 9)
    }
}
