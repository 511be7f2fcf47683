"""pagetrail engine: the recovery primitives and the pipeline that joins them.

Everything that knows about the web lives here; faces (server/, bot/, cli/) only parse,
call these functions and format their results.
"""
