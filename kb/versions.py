"""Version stamps the index records, in a module light enough to import on every query."""

# Bump when parsing a finding file can give a different record: the index is then rebuilt.
PARSER_VERSION = "2"
