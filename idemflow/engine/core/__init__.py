"""What the engine changes in moto's core, for every service alike: request dispatch and response
serialization (speedups), the in-process clients, botocore's data loader shared by the engine and moto, and
the services moto imports only when asked for (``lazy_moto``).
"""
