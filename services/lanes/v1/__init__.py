"""Generated lanes.v1 wire contract. DO NOT EDIT: run `make proto`.

Source: proto/lanes/v1/*.proto. Messages are in ``*_pb2``, services in ``*_pb2_grpc``.
"""
