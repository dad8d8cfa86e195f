"""The read side that `ratchet` commands, the HTTP API and the MCP server share.

- `task` and `journal`: what one task and its journal look like to a reader;
- `record_json`: the JSON shape of each record, built there only (the JSON key rules);
- `compare`: two or more tasks side by side, and where their journals part;
- `event_feed`: a task's events as they are written;
- `workers`: who works on the store, idle or not, and what each holds;
- `documents` and `uris`: the MCP resources a task is read through, and their addresses.
"""
