import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A recursive search that remembers the directories and files it has seen by identity.
public struct DirectorySearch {
    /// The file that skips its directory, or the names it lists: `.rulecignore`.
    public static let skipMarker = ".rulecignore"

    /// A search that has seen nothing yet.
    public init() {}

    private var seen = Set<[UInt64]>()

    /// True the first time the file or directory at `path` (followed through links) is seen.
    public mutating func firstVisit(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return true }
        return seen.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted
    }

    /// The `.rules` files below `directory`, sorted, as `rulec check DIR` takes them.
    public mutating func files(in directory: String) -> [String] {
        guard firstVisit(directory) else { return [] }
        let fm = FileManager.default
        guard let entries = try? fm.contentsOfDirectory(atPath: directory) else { return [] }
        var files: [String] = []
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        let ignored = DirectorySearch.ignoredNames(in: base)
        for entry in entries.sorted() where !entry.hasPrefix(".") && !ignored.contains(entry) {
            let path = base + entry
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                if DirectorySearch.skipsWholeDirectory(path + "/") { continue }
                files += self.files(in: path)
            } else if entry.hasSuffix(".rules") && firstVisit(path) {
                // A FIFO, socket or device named *.rules is never opened: reading one would
                // wait for a writer that may never come.
                if let kind = DirectorySearch.notRegular(path) {
                    DirectorySearch.skip(path, entry, "warning", "\(kind), not a regular file")
                    continue
                }
                if let tool = DirectorySearch.otherTool(path) {
                    DirectorySearch.skip(path, entry, "note", "\(tool), not rules of this language")
                    continue
                }
                files.append(path)
            }
        }
        return files
    }

    /// Says on standard error that `path` (`entry` in its folder) is skipped, and why.
    static func skip(_ path: String, _ entry: String, _ severity: String, _ why: String) {
        let note =
            "\(path): \(severity): skipped: \(why); to skip it silently, "
            + "list '\(entry)' in a '\(DirectorySearch.skipMarker)' file beside it\n"
        FileHandle.standardError.write(Data(note.utf8))
    }

    /// What the file at `path` (followed through links) is when it is not a regular file: "a
    /// FIFO", "a socket", "a device", ...; nil for a regular file or one that cannot be looked at.
    public static func notRegular(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFDIR: return "a directory"
        default: return "not a file"
        }
    }

    /// The text of `base`'s `.rulecignore`, read only when it is a regular file.
    static func ignoreFile(_ base: String) -> String? {
        let path = base + DirectorySearch.skipMarker
        guard notRegular(path) == nil else { return nil }
        return try? String(contentsOfFile: path, encoding: .utf8)
    }

    /// A `.rulecignore` file with no names skips its whole directory.
    static func skipsWholeDirectory(_ base: String) -> Bool {
        guard let text = ignoreFile(base) else {
            return FileManager.default.fileExists(atPath: base + DirectorySearch.skipMarker)
        }
        return names(text).isEmpty
    }

    /// The names a `.rulecignore` lists (one per line, `#` comments), skipped in its directory.
    static func ignoredNames(in base: String) -> Set<String> {
        guard let text = ignoreFile(base) else { return [] }
        return Set(names(text))
    }

    static func names(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// What other tool a `.rules` file belongs to, judged by its first word: Firebase Security
    /// Rules (`firestore.rules`, `storage.rules`, `database.rules`) start with `rules_version` or
    /// `service`; nil for anything else (a file of this language or a broken one).
    static func otherTool(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let head = String(decoding: handle.readData(ofLength: 4_096), as: UTF8.self)
        for line in head.split(whereSeparator: \.isNewline) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("//") || text.hasPrefix("#") { continue }
            let word = text.prefix { $0.isLetter || $0 == "_" }
            if word == "rules_version" || word == "service" { return "a Firebase Security Rules file" }
            return nil
        }
        return nil
    }
}
