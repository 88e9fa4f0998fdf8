import CloudPostgres
import Foundation
import Testing

private func passwordFile(_ content: String, mode: Int = 0o600) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pgpass-\(UUID().uuidString)").path
    try Data(content.utf8).write(to: URL(fileURLWithPath: path))
    try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    return path
}

@Test func passwordComesFromTheGivenEnvironment() throws {
    #expect(try PostgresPassword.load(file: nil, environment: ["PGPASSWORD": "from-env"]) == "from-env")
    #expect(try PostgresPassword.load(file: nil, environment: [:]) == nil)
    #expect(try PostgresPassword.load(file: nil, environment: ["PGPASSWORD": ""]) == nil)
}

@Test func passwordFileGivesItsFirstLineTrimmedAndWinsOverTheEnvironment() throws {
    let path = try passwordFile("  s3cret \nsecond line\n")
    defer { try? FileManager.default.removeItem(atPath: path) }
    #expect(try PostgresPassword.load(file: path, environment: ["PGPASSWORD": "from-env"]) == "s3cret")
}

@Test func passwordFileOpenToOthersOrEmptyOrMissingIsRefusedWithoutItsContent() throws {
    let open = try passwordFile("visible\n", mode: 0o644)
    let empty = try passwordFile("\nsecond\n")
    defer {
        try? FileManager.default.removeItem(atPath: open)
        try? FileManager.default.removeItem(atPath: empty)
    }
    for path in [open, empty, "/nonexistent/sightline-password"] {
        #expect {
            try PostgresPassword.load(file: path, environment: [:])
        } throws: { error in
            guard let failure = error as? PostgresFailure else { return false }
            return failure.code == .password && failure.description.contains(path)
                && !failure.description.contains("visible")
        }
    }
}
