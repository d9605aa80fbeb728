"""Measurement: input samples (`inputs`: random, files, images via `images`), comparing outputs (`compare`),
latency statistics (`latency`), and which precisions a backend really computes in (`compute`)."""
