"""What ``agent plugins`` lists of the finance plugin without importing it (``core.plugin.describe_plugin``):
its description, its tools' names in order and the modules of its extra that loading it imports.
The plugin's ``description`` is this one; ``tests/core/test_plugin_manifests.py`` checks the
rest against the loaded plugin, so that it cannot drift."""

DESCRIPTION = "Answer questions about company filings and write research reports; every figure traced to a page."
TOOLS = ("list_documents", "search_filing", "read_page", "get_statement", "get_table", "get_metrics", "sql", "answer_question",
         "market_data", "write_report", "finish")
REQUIRES = ("pdfplumber", "pypdfium2", "bm25s", "snowballstemmer", "matplotlib", "markdown_it")
