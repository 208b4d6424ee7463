"""The wire protocol (docs/PROTOCOL.md): its codec, a server for Python implementations, the
suite's client for drivers in any language, and transcripts (vectors, failure files, replay).

Never imports `paged`: it serves or drives whatever implementation it is given.
"""
