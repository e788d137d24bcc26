"""Upstream behaviour cases written from the upstream sources (each module cites file and commit), so
a clone without ../shared still checks fitguard against them."""
