"""The open model: loading it off the GUI thread, its summary, input shapes, node properties and readiness findings."""
