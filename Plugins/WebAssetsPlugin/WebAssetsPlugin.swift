import PackagePlugin

/// Embeds the library page into its module (StreamWebPage, Sources/Web) at build time: runs
/// `embedweb` over the module's page files (every file but its Swift), writing `WebAssets.swift`
/// into the plugin's work directory, so the page has one copy in the tree and streamd stays one
/// self-contained binary (no resource bundle to find at run time).
@main struct WebAssetsPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let module = target.sourceModule else { return [] }
        let pages = module.sourceFiles.filter { $0.type != .source }.map(\.url)
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "WebAssets.swift")
        return [.buildCommand(displayName: "Embedding the page's files of \(target.name) into WebAssets.swift",
                              executable: try context.tool(named: "embedweb").url,
                              arguments: [output.path] + pages.map(\.path),
                              inputFiles: pages, outputFiles: [output])]
    }
}
