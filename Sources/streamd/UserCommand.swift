import ArgumentParser
import Foundation
import StreamAuth
import StreamLibrary
#if canImport(Glibc)
import Glibc
#endif

/// The options every `streamd user` command takes: which catalog database holds the accounts.
struct AccountDatabaseOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The music folder whose catalog holds the accounts (as `streamd serve` takes it).", valueName: "DIR"))
    var folder: String = "media"

    @Option(help: ArgumentHelp("The catalog database (as `streamd serve --db`); overrides --folder.", valueName: "PATH"))
    var db: String?
}

extension AccountDatabaseOptions {
    /// The accounts of the catalog database, its schema brought up to date first.
    func openStore() throws -> UserStore {
        let databasePath: String
        let folderPath: String
        if let db {
            databasePath = (db as NSString).expandingTildeInPath
            folderPath = PathResolver(folder: folder)?.root ?? folder
        } else {
            guard let resolver = PathResolver(folder: folder) else { throw exitLine("no such folder: \(folder) (or give --db)") }
            folderPath = resolver.root
            databasePath = LibraryStore.defaultPath(forFolder: resolver.root, environment: ProcessInfo.processInfo.environment)
        }
        do {
            let library = try LibraryStore(path: databasePath, folder: folderPath)
            library.close()
            return try UserStore(databasePath: databasePath, keyFile: UserStore.keyFilePath(forDatabase: databasePath))
        } catch {
            throw exitLine("\(databasePath): \(error)")
        }
    }
}

/// Reads a password: from the terminal without echo (asked twice when `confirm`), or one line
/// of stdin when stdin is not a terminal. Never from the command line (argv is visible to
/// every user of the machine in /proc).
func readPassword(prompt: String, confirm: Bool) throws -> String {
    if isatty(STDIN_FILENO) == 1 {
        func ask(_ text: String) -> String? {
            FileHandle.standardError.write(Data(text.utf8))
            var saved = termios()
            tcgetattr(STDIN_FILENO, &saved)
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
            defer {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
                FileHandle.standardError.write(Data("\n".utf8))
            }
            return readLine(strippingNewline: true)
        }
        guard let first = ask(prompt), !first.isEmpty else { throw exitLine("no password given") }
        if confirm {
            guard let second = ask("Again: "), second == first else { throw exitLine("the passwords differ") }
        }
        return first
    }
    guard let line = readLine(strippingNewline: true), !line.isEmpty else {
        throw exitLine("no password on stdin (one line expected)")
    }
    return line
}

/// `streamd user add|passwd|del|list|apikey`: the accounts of a library's catalog.
struct UserCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Manage the accounts that may use the server (stored in the catalog database).",
        discussion: "Passwords are read from the terminal without echo, or as one line of stdin when it is not a terminal; never from the command line. A running server sees changes at once.",
        subcommands: [Add.self, Passwd.self, Del.self, List.self, APIKey.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a user; prints their Subsonic app password.")
        @Argument(help: "The user name (letters, digits, '.', '-', '_', '@').") var name: String
        @Flag(help: "An admin (radio admin, status pages, server changes).") var admin = false
        @OptionGroup var database: AccountDatabaseOptions

        func run() throws {
            let store = try database.openStore()
            let password = try readPassword(prompt: "Password for \(name): ", confirm: true)
            do {
                let (user, appPassword) = try store.add(name: name, password: password, role: admin ? .admin : .user)
                print("added \(user.role.rawValue) \(user.name)")
                print("Subsonic app password (for Subsonic apps; change it with `streamd user passwd \(user.name) --subsonic`): \(appPassword)")
            } catch {
                throw exitLine("\(error)")
            }
        }
    }

    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a user's password (or, with --subsonic, their Subsonic app password).")
        @Argument(help: "The user name.") var name: String
        @Flag(help: "Set the Subsonic app password instead of the web password.") var subsonic = false
        @Flag(help: "With --subsonic: make a new random app password and print it.") var random = false
        @Flag(help: "Make the user an admin.") var admin = false
        @Flag(help: "Make the user a normal user.") var noAdmin = false
        @OptionGroup var database: AccountDatabaseOptions

        func run() throws {
            let store = try database.openStore()
            do {
                if admin || noAdmin {
                    try store.setRole(name: name, role: admin ? .admin : .user)
                    print("\(name) is now \(admin ? "an admin" : "a normal user")")
                    return
                }
                if subsonic {
                    let clear = try store.setSubsonicPassword(name: name, password: random ? nil : try readPassword(prompt: "Subsonic app password for \(name): ", confirm: true))
                    print(random ? "Subsonic app password of \(name): \(clear)" : "Subsonic app password of \(name) changed")
                    return
                }
                try store.setPassword(name: name, password: try readPassword(prompt: "New password for \(name): ", confirm: true))
                print("password of \(name) changed")
            } catch let error as UserStoreError {
                throw exitLine("\(error)")
            }
        }
    }

    struct Del: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a user and their API keys.")
        @Argument(help: "The user name.") var name: String
        @OptionGroup var database: AccountDatabaseOptions

        func run() throws {
            do {
                try database.openStore().delete(name: name)
                print("deleted \(name)")
            } catch let error as UserStoreError {
                throw exitLine("\(error)")
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the users and their roles.")
        @OptionGroup var database: AccountDatabaseOptions

        func run() throws {
            let store = try database.openStore()
            do {
                for user in try store.users() {
                    print("\(user.name)\t\(user.role.rawValue)\t\(try store.apiKeys(name: user.name).count) API keys")
                }
            } catch {
                throw exitLine("\(error)")
            }
        }
    }

    struct APIKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apikey",
            abstract: "OpenSubsonic API keys, also Bearer tokens for streamplay and scripts (stored hashed).",
            subcommands: [AddKey.self, ListKeys.self, RevokeKey.self])

        struct AddKey: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "add", abstract: "Make a key for a user and print it (once).")
            @Argument(help: "The user name.") var name: String
            @Option(help: "What the key is for (shown by list).") var label: String = ""
            @OptionGroup var database: AccountDatabaseOptions

            func run() throws {
                do {
                    let (key, record) = try database.openStore().addAPIKey(name: name, label: label)
                    print("API key \(record.id) of \(name): \(key)")
                } catch let error as UserStoreError {
                    throw exitLine("\(error)")
                }
            }
        }

        struct ListKeys: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "List a user's keys (not the keys themselves).")
            @Argument(help: "The user name.") var name: String
            @OptionGroup var database: AccountDatabaseOptions

            func run() throws {
                do {
                    for key in try database.openStore().apiKeys(name: name) {
                        let created = Date(timeIntervalSince1970: TimeInterval(key.createdSeconds))
                        print("\(key.id)\t\(created)\t\(key.label)")
                    }
                } catch let error as UserStoreError {
                    throw exitLine("\(error)")
                }
            }
        }

        struct RevokeKey: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "revoke", abstract: "Revoke a user's key by its number.")
            @Argument(help: "The user name.") var name: String
            @Argument(help: "The key's number (from list).") var id: Int64
            @OptionGroup var database: AccountDatabaseOptions

            func run() throws {
                do {
                    try database.openStore().revokeAPIKey(name: name, id: id)
                    print("revoked key \(id) of \(name)")
                } catch let error as UserStoreError {
                    throw exitLine("\(error)")
                }
            }
        }
    }
}
