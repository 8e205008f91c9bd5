"""One module per CLI command group; each registers its commands on ``agent.cli.app.app``."""
