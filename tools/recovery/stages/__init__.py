"""The recovery's stages, cheapest and surest first; the order and the stop rule are in
`tools.recovery.chain`, which makes one object of each stage per recovery.

Every stage has the shape of `stages.base.Stage` (`NAME`, `plan`, `settle`) and keeps its
own bookkeeping; what flows between the stages is the frozen `recovery.context.Context`
and the `Findings` (candidates, failures, queries, the ranking).

Stages: `direct` (picks, archived redirects, rewrite rules), `dead_site` (the site's own
map and captures), `moved_host` (the host's variants that answer), `siblings` (the slug
under live siblings' folders), `answer_sites` (sites that held other links' answers),
`links` (the neighbourhood: maps of candidates' sites and the link graph), `web` (the
planned queries, one round per query-plan stage).
"""
