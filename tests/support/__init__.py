"""Helpers and fakes the tests share: run-folder readers, bench launchers, TCP proxies, golden figures.

Test files import from here and never from one another.
"""
