import Foundation
import XCTest

/// RuleRuntime's folders are layers, each built on those before it: Storage, State, Compile,
/// Engine, Delivery (docs/architecture.md). A file names only types declared in its own layer
/// or below, so no two folders depend on each other.
final class LayerTests: XCTestCase {
    static let layers = ["Storage", "State", "Compile", "Engine", "Delivery"]
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/RuleRuntime")

    /// A file's text without its comments (a type named in a comment is no dependency).
    static func code(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            guard let comment = line.range(of: "//") else { return String(line) }
            return String(line[..<comment.lowerBound])
        }.joined(separator: "\n")
    }

    /// The types a file declares at its top level (nested types are named through their owner).
    static func declaredTypes(_ code: String) -> [String] {
        let modifiers: Set<String> = ["public", "internal", "private", "fileprivate", "package", "final", "indirect"]
        let kinds: Set<String> = ["struct", "class", "enum", "protocol", "typealias", "actor"]
        var names: [String] = []
        for line in code.split(separator: "\n") where !(line.first?.isWhitespace ?? true) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "<" || $0 == ":" || $0 == "{" || $0 == "=" })
            var index = 0
            while index < words.count, words[index].hasPrefix("@") || modifiers.contains(String(words[index])) {
                index += 1
            }
            if index + 1 < words.count, kinds.contains(String(words[index])) { names.append(String(words[index + 1])) }
        }
        return names
    }

    func testEachFolderNamesOnlyTypesOfItsLayerOrBelow() throws {
        var layerOf: [String: Int] = [:]
        var files: [(layer: Int, path: String, code: String)] = []
        let manager = FileManager.default
        for case let path as String in manager.enumerator(atPath: Self.root.path)! where path.hasSuffix(".swift") {
            let folder = String(path.split(separator: "/").first ?? "")
            let layer = try XCTUnwrap(
                Self.layers.firstIndex(of: folder), "\(path) lies outside the layers \(Self.layers)")
            let code = Self.code(try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8))
            files.append((layer, path, code))
            for name in Self.declaredTypes(code) { layerOf[name] = layer }
        }
        XCTAssertGreaterThan(layerOf.count, 50, "the declarations were not found")
        var upward: Set<String> = []
        for file in files {
            let words = file.code.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
            for word in Set(words.map(String.init)) {
                if let layer = layerOf[word], layer > file.layer {
                    upward.insert("\(file.path) names \(word), of \(Self.layers[layer])")
                }
            }
        }
        XCTAssertEqual(upward.sorted(), [])
    }
}
