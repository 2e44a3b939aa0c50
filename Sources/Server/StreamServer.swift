/// StreamServer: the streamd HTTP server (event loop, routes, catalog). Built by a later issue.
public enum StreamServerModule {}
