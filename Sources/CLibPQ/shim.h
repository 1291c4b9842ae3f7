// libpq, PostgreSQL's C client (Debian: libpq-dev; Homebrew: libpq), for RuleServer only: apps
// never link it. Found through pkg-config (`pkgConfig: "libpq"` in Package.swift).
#include <libpq-fe.h>
