"""Pure logic that a TensorRT backend calls: profiles, engine caching, dtypes, build progress.

Nothing here imports tensorrt or cuda, so all of it runs and is tested on machines without them.
"""
