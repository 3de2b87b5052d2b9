"""Generated protobuf and gRPC modules of leasekeeper.v1 (generate_stubs.py)."""
