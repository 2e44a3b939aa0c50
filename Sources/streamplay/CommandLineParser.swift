/// A command-line mistake: streamplay prints it with the usage lines and exits 2 (DESIGN.md).
struct UsageError: Error, CustomStringConvertible {
    var description: String
    /// The option concerned and its help, printed after the error ("--start <start>  Start …").
    var optionHelp: String?
    init(_ message: String, optionHelp: String? = nil) {
        description = message
        self.optionHelp = optionHelp
    }
}

/// One option of a command: how it is spelled, the value it takes (nil for a flag), its line of
/// help, the default `--help` shows, and how a given value sets the command's field.
struct OptionSpec<Command> {
    let name: String
    let valueName: String?
    let help: String
    var shownDefault: String? = nil
    /// Takes the next argument as its value even when it starts with '-' (`--pitch -3`).
    var unconditional = false
    var hidden = false
    let set: (inout Command, String) throws(UsageError) -> Void

    /// A flag: present means true.
    static func flag(_ name: String, help: String, _ keyPath: WritableKeyPath<Command, Bool>) -> OptionSpec {
        OptionSpec(name: name, valueName: nil, help: help) { command, _ in command[keyPath: keyPath] = true }
    }

    /// An option whose value converts with `T(String)`, shown as `<name>` in the help.
    static func value<T: LosslessStringConvertible>(_ name: String, help: String, _ keyPath: WritableKeyPath<Command, T>,
                                                    showDefault: Bool = true, unconditional: Bool = false,
                                                    hidden: Bool = false, defaults: Command) -> OptionSpec {
        OptionSpec(name: name, valueName: "<\(name)>", help: help,
                   shownDefault: showDefault ? "\(defaults[keyPath: keyPath])" : nil, unconditional: unconditional,
                   hidden: hidden) { command, text throws(UsageError) in
            guard let value = T(text) else { throw UsageError("The value '\(text)' is invalid for '--\(name) <\(name)>'") }
            command[keyPath: keyPath] = value
        }
    }

    /// An option with no default (nil until given).
    static func optional<T: LosslessStringConvertible>(_ name: String, help: String,
                                                       _ keyPath: WritableKeyPath<Command, T?>) -> OptionSpec {
        OptionSpec(name: name, valueName: "<\(name)>", help: help) { command, text throws(UsageError) in
            guard let value = T(text) else { throw UsageError("The value '\(text)' is invalid for '--\(name) <\(name)>'") }
            command[keyPath: keyPath] = value
        }
    }
}

/// Parses a command line against a table of options and one positional argument, and writes
/// the help text, in the forms swift-argument-parser used for streamplay (the same `--help`
/// output, `--name value` and `--name=value`, `--` ending the options, errors worded alike).
struct CommandLineParser<Command> {
    let name: String
    let overview: String
    let argumentName: String
    let argumentHelp: String
    let options: [OptionSpec<Command>]
    /// Called for each positional argument, in order.
    let setArgument: (inout Command, String) -> Void
    /// More than one positional argument is taken (streamplay's queue); at least one is needed.
    var acceptsSeveralArguments = false

    /// What the arguments ask for: a command to run, or the help text.
    enum Outcome {
        case run(Command)
        case help
    }

    func parse(_ arguments: [String], into initial: Command) throws(UsageError) -> Outcome {
        let optionArguments = arguments.prefix { $0 != "--" }
        if optionArguments.contains(where: { $0 == "-h" || $0 == "--help" }) { return .help }
        var command = initial
        var positional: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                positional += arguments[index...]
                break
            }
            guard argument.hasPrefix("-"), argument.count > 1, Double(argument) == nil else {
                positional.append(argument)
                continue
            }
            let body = argument.drop { $0 == "-" }
            let equals = body.firstIndex(of: "=")
            let optionName = String(body[..<(equals ?? body.endIndex)])
            guard argument.hasPrefix("--"), let option = options.first(where: { $0.name == optionName }) else {
                throw UsageError("Unknown option '\(argument)'")
            }
            guard let valueName = option.valueName else {
                if let equals {
                    let value = body[body.index(after: equals)...]
                    throw UsageError("The option '--\(optionName)' does not take any value, but '\(value)' was specified.")
                }
                try option.set(&command, "")
                continue
            }
            let optionHelp = "--\(option.name) \(valueName)  \(option.help)"
            let value: String
            if let equals {
                value = String(body[body.index(after: equals)...])
            } else {
                // A following option is not a value (a negative number is), unless the option takes anything.
                guard index < arguments.count,
                      option.unconditional || !arguments[index].hasPrefix("-") || Double(arguments[index]) != nil else {
                    throw UsageError("Missing value for '--\(option.name) \(valueName)'", optionHelp: optionHelp)
                }
                value = arguments[index]
                index += 1
            }
            do { try option.set(&command, value) } catch {
                throw UsageError(error.description, optionHelp: optionHelp)
            }
        }
        guard !positional.isEmpty else { throw UsageError("Missing expected argument '<\(argumentName)>'") }
        guard positional.count == 1 || acceptsSeveralArguments else { throw UsageError("Unexpected argument '\(positional[1])'") }
        for argument in positional { setArgument(&command, argument) }
        return .run(command)
    }

    var usage: String { "\(name) [<options>] <\(argumentName)>" + (acceptsSeveralArguments ? " ..." : "") }

    /// The help text, lines under 80 columns, with the help of each option from column 27.
    var help: String {
        var lines = Self.wrap("OVERVIEW: " + overview, width: 80, indent: "")
        lines += ["", "USAGE: \(usage)", "", "ARGUMENTS:"]
        lines += Self.entry("<\(argumentName)>", argumentHelp)
        lines += ["", "OPTIONS:"]
        for option in options where !option.hidden {
            let label = "--\(option.name)" + (option.valueName.map { " \($0)" } ?? "")
            lines += Self.entry(label, option.help + (option.shownDefault.map { " (default: \($0))" } ?? ""))
        }
        lines += Self.entry("-h, --help", "Show help information.")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A label at column 3 and its help at column 27 (on the next line when the label is longer).
    private static func entry(_ label: String, _ text: String) -> [String] {
        let column = String(repeating: " ", count: 26)
        var wrapped = wrap(text, width: 80, indent: column)
        let labelled = "  " + label
        if labelled.count < 26 {
            wrapped[0] = labelled + String(repeating: " ", count: 26 - labelled.count) + wrapped[0].dropFirst(26)
            return wrapped
        }
        return [labelled] + wrapped
    }

    /// `text` broken at spaces into lines shorter than `width` characters, each after `indent`.
    private static func wrap(_ text: String, width: Int, indent: String) -> [String] {
        var lines: [String] = []
        var line = indent
        for word in text.split(separator: " ") {
            if line.count > indent.count && line.count + 1 + word.count >= width {
                lines.append(line)
                line = indent
            }
            line += (line.count > indent.count ? " " : "") + word
        }
        lines.append(line)
        return lines
    }
}
