"""Content-Encoding decoded with an output bound: a decompression bomb stops at the bound.

Private to the fetch layer (`tools.net.fetch`) and the bulk client (`tools.net.bulkfetch`)."""

from __future__ import annotations

import zlib
from typing import Any

from pagetrail.tools.errors import BodyTooLarge, DecompressionBomb, UnsupportedContent

# A compressed body that inflates past max_bytes at more than this ratio is a bomb, not a
# big page: real HTML compresses 5–15×; zip bombs reach 1000×.
BOMB_RATIO = 50.0
CHUNK = 64 * 1024


class _BoundedDecoder:
    """Content-Encoding decoder that never produces more than `limit` bytes in total."""

    def __init__(self, encoding: str, limit: int, url: str) -> None:
        self.encoding = encoding
        self.limit = limit
        self.url = url
        self.produced = 0
        self.consumed = 0
        self._obj = self._new()

    def _new(self) -> Any:
        if self.encoding in ("gzip", "x-gzip"):
            return zlib.decompressobj(zlib.MAX_WBITS | 16)
        if self.encoding == "deflate":
            return zlib.decompressobj()
        return None

    def feed(self, data: bytes) -> bytes:
        self.consumed += len(data)
        if self._obj is None:
            self.produced += len(data)
            self._check()
            return data
        out = bytearray()
        while data:
            try:
                piece = self._obj.decompress(data, self.limit - self.produced + 1)
            except zlib.error as exc:
                if self.encoding == "deflate" and self.produced == 0 and not out:
                    self._obj = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate
                    continue
                raise UnsupportedContent(f"undecodable {self.encoding} body: {exc}",
                                         url=self.url) from exc
            out += piece
            self.produced += len(piece)
            self._check()
            if self._obj.unconsumed_tail:
                data = self._obj.unconsumed_tail
            elif self._obj.eof and self._obj.unused_data:
                data = self._obj.unused_data  # another gzip member follows
                self._obj = self._new()
            else:
                data = b""
        return bytes(out)

    def _check(self) -> None:
        if self.produced <= self.limit:
            return
        ratio = self.produced / max(self.consumed, 1)
        if self._obj is not None and ratio >= BOMB_RATIO:
            raise DecompressionBomb(
                f"body inflates {ratio:.0f}× past {self.limit} bytes", url=self.url)
        raise BodyTooLarge(f"body larger than {self.limit} bytes", url=self.url)
