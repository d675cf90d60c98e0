"""xdist_group marks which tests tests/run keeps on one pytest worker
(--dist loadgroup); registered here too, so that a run without
pytest-xdist does not warn about an unknown mark."""


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): run these tests on one pytest-xdist worker")
