"""A tenant's knowledge base: documents (Markdown, HTML, PDF, plain text, or fetched by URL),
chunked by headings, each chunk with its document's title, URL, date and audience."""
