"""Graph transforms that carry precision (pure: ModelProto in, new ModelProto out)."""
