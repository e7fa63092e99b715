# SPDX-License-Identifier: BSD-2-Clause
# warrantd - see README.md.  `make`, `make test`, `make demo`, `make install`.

PREFIX  ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
MANDIR  ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/vendor-completions
DOCDIR  ?= $(PREFIX)/share/doc/warrantd
BUILD   ?= build/release
SAN     ?=

PKGS    := hiredis libcurl jansson openssl libmicrohttpd
# The tests' own libraries: libjwt is the independent implementation that
# checks what jws.c signs (the daemon signs and verifies with libcrypto).
TEST_PKGS := libjwt
CC      ?= cc
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 $(WARN) -D_FILE_OFFSET_BITS=64 -Iinclude -I$(BUILD)/gen
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS)) -lev -lm -pthread
TEST_CFLAGS = $(shell pkg-config --cflags $(TEST_PKGS))
TEST_LIBS  = $(shell pkg-config --libs $(TEST_PKGS))
ifeq ($(SAN),1)
CFLAGS  += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

# src/ is grouped by layer (HACKING.md "Layout"); each folder's headers are
# include/FOLDER/, named "FOLDER/x.h". The programs' mains stay out of the library.
LAYERS    := base jose core conf http auth redis worker ctl
MAINS     := src/warrantd.c src/ctl/warrantctl.c
CORE_SRC  := $(filter-out $(MAINS),$(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c)))
CORE_OBJ  := $(CORE_SRC:src/%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/store_scripts.o
# lua/*.lua embedded by scripts/luagen.sh: the table (.c) and its enums (.h)
LUA_SRC   := $(sort $(wildcard lua/*.lua))
GEN_H     := $(BUILD)/gen/store_scripts.h
GEN_C     := $(BUILD)/gen/store_scripts.c
LIB       := $(BUILD)/libwarrant.a
BINS      := $(BUILD)/bin/warrantd $(BUILD)/bin/warrantctl

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FAKE_SRC  := $(wildcard tests/fakes/fake_*.c)
FAKE_BIN  := $(FAKE_SRC:tests/fakes/%.c=$(BUILD)/tests/%)
ITEST_SRC := $(wildcard tests/integration/itest_*.c)
ITEST_BIN := $(ITEST_SRC:tests/integration/%.c=$(BUILD)/tests/%)

.PHONY: all bins unit modes deps clients-deps clients-test bench-clients test test-unit test-asan test-integration demo bench bench-scale \
	bench-peers bench-slow \
	interop interop-oidc interop-cerbos test-web test-web-load lint-web \
	install clean lint-man \
	deb test-deb faults soak fuzz fuzz-build lint scan-objs valgrind
.SUFFIXES:

all: bins modes
	@mkdir -p bin && cp -f $(BINS) bin/

# git records no group/other bits: the example's placeholder secret and the
# test keys get the mode warrantd(7) §9 demands of a secret (warrantd refuses one
# that group or others may read), so that `warrantd -t` and the tests pass.
SECRET_FILES := conf/client-secret $(wildcard tests/data/*.key tests/data/*.secret)
modes:
	@chmod go-rwx $(SECRET_FILES)

bins: $(BINS)

# -MMD: each library object depends on the headers it includes, no more;
# the generated header is there before the first compile (order-only).
DEPFLAGS = -MMD -MP

$(BUILD)/obj/%.o: src/%.c | $(BUILD)/obj $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) $(PKG_CFLAGS) -c -o $@ $<

$(BUILD)/obj/store_scripts.o: $(GEN_C) $(GEN_H) include/core/store.h | $(BUILD)/obj
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(GEN_H) $(GEN_C) &: $(LUA_SRC) scripts/luagen.sh
	sh scripts/luagen.sh $(BUILD)/gen $(LUA_SRC)

$(BUILD)/obj $(BUILD)/bin $(BUILD)/tests:
	@mkdir -p $@

$(LIB): $(CORE_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# Programs and tests link the whole library: any header may change them.
HEADERS := $(wildcard include/*/*.h) $(GEN_H)

$(BUILD)/bin/warrantd: src/warrantd.c $(LIB) $(HEADERS) | $(BUILD)/bin
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS)

$(BUILD)/bin/warrantctl: src/ctl/warrantctl.c $(LIB) $(HEADERS) | $(BUILD)/bin
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS)

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB) $(HEADERS) $(LUA_SRC) | $(BUILD)/tests
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -Itests -DLUA_DIR='"$(CURDIR)/lua"' $(LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS) $(TEST_LIBS) -lcmocka

FAKE_COMMON := $(wildcard tests/fakes/common.c)
$(BUILD)/tests/fake_%: tests/fakes/fake_%.c $(FAKE_COMMON) $(wildcard tests/fakes/*.h) $(LIB) $(HEADERS) | $(BUILD)/tests
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(FAKE_COMMON) $(LIB) $(PKG_LIBS) $(TEST_LIBS) -lmicrohttpd

HARNESS := $(wildcard tests/integration/harness.c)
$(BUILD)/tests/itest_%: tests/integration/itest_%.c $(HARNESS) $(wildcard tests/integration/*.h) $(LIB) $(HEADERS) | $(BUILD)/tests
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -Itests -Itests/integration $(LDFLAGS) -o $@ $< $(HARNESS) $(LIB) $(PKG_LIBS) $(TEST_LIBS) -lcmocka

# test_rconn_wipe sees every write rconn makes (issue 37 item 5).
$(BUILD)/tests/test_rconn_wipe: LDFLAGS += -Wl,--wrap=rtls_link_write -Wl,--wrap=free

# test_http_wipe watches which options http.c hands libcurl.
$(BUILD)/tests/test_http_wipe: LDFLAGS += -Wl,--wrap=curl_easy_setopt -Wl,--wrap=curl_easy_cleanup \
	-Wl,--wrap=curl_easy_reset

# The fault matrix and the soak (tests/faults/): built like the itest_*
# programs on the harness (whose shared checks are cmocka's, hence -lcmocka),
# but run only by `make faults` and `make soak`.
FAULTS_COMMON := tests/faults/world.c $(HARNESS)
FAULTS_DEPS   := $(FAULTS_COMMON) $(wildcard tests/faults/*.h) $(wildcard tests/integration/*.h) $(LIB)
FAULTS_BIN    := $(BUILD)/tests/faults $(BUILD)/tests/soak
FAULTS_CFLAGS  = $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -Itests -Itests/integration -Itests/faults $(LDFLAGS)
$(BUILD)/tests/faults: tests/faults/faults.c tests/faults/scenarios.c $(FAULTS_DEPS) | $(BUILD)/tests
	$(CC) $(FAULTS_CFLAGS) -o $@ tests/faults/faults.c tests/faults/scenarios.c $(FAULTS_COMMON) $(LIB) $(PKG_LIBS) $(TEST_LIBS) -lcmocka
$(BUILD)/tests/soak: tests/faults/soak.c $(FAULTS_DEPS) | $(BUILD)/tests
	$(CC) $(FAULTS_CFLAGS) -o $@ tests/faults/soak.c $(FAULTS_COMMON) $(LIB) $(PKG_LIBS) $(TEST_LIBS) -lcmocka

# ---- warrantd-web (src/web/, HACKING.md "The web console"): a program of its
# own on libmicrohttpd. Its modules are an archive of their own, linked by the
# program and by tests/unit/test_web*.c (a pattern with a longer prefix, so it
# wins over test_%); its assets (src/web/assets/) are compiled in.
WEB_MAIN    := src/web/web.c
WEB_SRC     := $(filter-out $(WEB_MAIN),$(wildcard src/web/*.c))
WEB_ASSETS  := $(sort $(wildcard src/web/assets/*))
WEB_GEN_C   := $(BUILD)/gen/web_assets.c
WEB_OBJ     := $(WEB_SRC:src/web/%.c=$(BUILD)/obj/web/%.o) $(BUILD)/obj/web/web_assets.o
WEB_LIB     := $(BUILD)/libwarrantweb.a
WEB_BIN     := $(BUILD)/bin/warrantd-web
WEB_HEADERS := $(wildcard src/web/*.h)
WEB_CFLAGS   = -Isrc/web $(shell pkg-config --cflags libmicrohttpd)
WEB_LIBS     = $(shell pkg-config --libs libmicrohttpd)
BINS        += $(WEB_BIN)

$(BUILD)/obj/web/%.o: src/web/%.c | $(BUILD)/obj/web $(GEN_H)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) $(PKG_CFLAGS) $(WEB_CFLAGS) -c -o $@ $<

$(WEB_GEN_C): $(WEB_ASSETS) scripts/webassets.sh | $(BUILD)/obj/web
	@mkdir -p $(BUILD)/gen
	sh scripts/webassets.sh $@ $(WEB_ASSETS)

$(BUILD)/obj/web/web_assets.o: $(WEB_GEN_C) src/web/wasset.h | $(BUILD)/obj/web
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WEB_CFLAGS) -c -o $@ $<

$(BUILD)/obj/web:
	@mkdir -p $@

$(WEB_LIB): $(WEB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(WEB_BIN): $(WEB_MAIN) $(WEB_LIB) $(LIB) $(HEADERS) $(WEB_HEADERS) | $(BUILD)/bin
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) $(WEB_CFLAGS) $(LDFLAGS) -o $@ $< $(WEB_LIB) $(LIB) \
		$(PKG_LIBS) $(WEB_LIBS)

$(BUILD)/tests/test_web%: tests/unit/test_web%.c $(WEB_LIB) $(LIB) $(HEADERS) $(WEB_HEADERS) | $(BUILD)/tests
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) $(WEB_CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(WEB_LIB) \
		$(LIB) $(PKG_LIBS) $(WEB_LIBS) -lcmocka

bins: $(WEB_BIN)

# make lint covers the console too: clang-tidy with its own include path.
lint: lint-web
lint-web: $(GEN_H)
	@fail=0; for f in $(WEB_SRC) $(WEB_MAIN); do \
		clang-tidy --quiet $$f -- $(TIDY_FLAGS) $(WEB_CFLAGS) || fail=1; \
	done; test $$fail = 0

# The console in a real browser (tests/web/): Debian's chromium, headless,
# driven by puppeteer-core pinned in tests/web/package-lock.json; nothing is
# downloaded at test time but those packages (npm ci).
test-web: all $(BUILD)/tests/fake_target
	@sh tests/web/run.sh $(BUILD)

# The same, and the closing note's load (tests/README.md "The console under
# load"): 10 browsers on the overview beside a worker kept at full speed by
# bench/mkrecords (ids from BENCH_FIRST), about 40 s more.
test-web-load: all $(BUILD)/tests/fake_target $(BUILD)/tests/mkrecords
	@WEB_LOAD=1 sh tests/web/run.sh $(BUILD)

$(BUILD)/tests/mkrecords: bench/mkrecords.c $(LIB) $(HEADERS) | $(BUILD)/tests
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS)

unit: $(UNIT_BIN) $(FAKE_BIN) $(ITEST_BIN) $(BINS) $(FAULTS_BIN) modes

deps:
	@sh scripts/deps.sh

# Unit tests twice (plain, then ASan+UBSan), then the integration tests
# against the real binaries, real redis-server and real HTTP fakes.
test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 unit
	@sh tests/run.sh build/release build/asan

test-unit: unit
	@sh tests/run.sh --unit-only $(BUILD)

# make faults [FAULT_SEEDS=N] [FAULT_SEED=S] [SCENARIO=NAME|all|list]: see
# tests/faults/faults.c. make soak [SOAK_SECONDS=N]: see tests/faults/soak.c.
FAULT_SEEDS  ?= 20
SOAK_SECONDS ?= 600
FAULTS_ENV = WARRANTD_BIN_DIR=$(abspath $(BUILD)/bin) WARRANTD_TEST_DIR=$(abspath $(BUILD)/tests)
faults: all $(FAKE_BIN) $(FAULTS_BIN)
	@$(FAULTS_ENV) nice $(BUILD)/tests/faults $(if $(SCENARIO),--scenario $(SCENARIO),\
		$(if $(FAULT_SEED),--seed $(FAULT_SEED),--seeds $(FAULT_SEEDS)))

soak: all $(FAKE_BIN) $(FAULTS_BIN)
	@$(FAULTS_ENV) nice $(BUILD)/tests/soak $(SOAK_SECONDS)

# Against real servers (tests/README.md "Against real services"), each
# installed from the npm registry at pinned versions, everything on
# 127.0.0.1. interop-oidc: node-oidc-provider (DPoP, RAR, private_key_jwt;
# tests/interop/oidc/package-lock.json); interop-cerbos: Cerbos 0.55 as the
# AuthZEN PDP (warrantd(7) §7), examples/policy/cerbos/.
interop: interop-oidc interop-cerbos

interop-cerbos: all $(BUILD)/tests/fake_target
	@bash tests/interop/cerbos.sh $(BUILD)

interop-oidc: all
	cd tests/interop/oidc && npm ci --no-audit --no-fund --loglevel=error
	WARRANTD_BIN_DIR=$(CURDIR)/$(BUILD)/bin node --test tests/interop/oidc/oidc.test.mjs

# The decider libraries (clients/, issue 40): their pinned Node dependencies,
# then pytest, node's test runner, `pip install`/`npm install` from the tree,
# and the conformance suite of the three writers (tests/conformance/) against
# a real redis-server and the real worker, single node and shards = 2.
clients-deps:
	@sh scripts/clients.sh

clients-test: deps all unit clients-deps
	@sh tests/clients.sh $(BUILD)

# The libraries' throughput with ES256 (bench/README.md "Decider libraries").
bench-clients: deps all clients-deps
	@sh bench/clients.sh

bench: deps all unit
	@sh bench/run.sh $(BUILD)
	@BENCH_OUT=bench/results.txt sh bench/idle.sh $(BUILD)
	@sh bench/scale.sh $(BUILD)

# Only the scaling part of make bench (workers x one Redis, x a cluster).
bench-scale: deps all unit
	@sh bench/scale.sh $(BUILD)

# warrantd against BullMQ (pinned in bench/peers/package-lock.json) on the same
# Redis and nginx, into bench/peers.txt; and against a target that answers
# after 100 ms, 64 to 10,000 in flight, into bench/slow.txt (bench/README.md).
bench-peers: all
	@sh bench/peers.sh $(BUILD)

bench-slow: all
	@sh bench/slow.sh $(BUILD)

demo: deps
	@$(MAKE) --no-print-directory all unit
	@sh examples/demo.sh $(BUILD)

# ---- fuzzing (tests/README.md "Fuzzing"): libFuzzer targets in fuzz/, built with
# Debian's clang against the same sources, with ASan and UBSan. Each runs for
# FUZZ_SECONDS from its seed corpus fuzz/corpus/NAME (read only) into a work
# corpus under build/fuzz/work/NAME; a crash is written to build/fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_DIR     := build/fuzz
FUZZ_FLAGS   := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
		-fno-sanitize-recover=undefined -std=c11 $(WARN) -D_FILE_OFFSET_BITS=64 -Iinclude \
		-I$(BUILD)/gen
FUZZ_SRC     := $(wildcard fuzz/fuzz_*.c)
FUZZ_BIN     := $(FUZZ_SRC:fuzz/%.c=$(FUZZ_DIR)/%)
FUZZ_OBJ     := $(CORE_SRC:src/%.c=$(FUZZ_DIR)/obj/%.o) $(FUZZ_DIR)/obj/store_scripts.o

$(FUZZ_DIR)/obj/%.o: src/%.c $(wildcard include/*/*.h) | $(GEN_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(PKG_CFLAGS) -c -o $@ $<

$(FUZZ_DIR)/obj/store_scripts.o: $(GEN_C) $(GEN_H) include/core/store.h
	@mkdir -p $(FUZZ_DIR)/obj
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(PKG_CFLAGS) -c -o $@ $(GEN_C)

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -DFUZZ_DATA_DIR='"$(CURDIR)/tests/data"' \
		$(PKG_CFLAGS) -o $@ $< $(FUZZ_OBJ) $(PKG_LIBS)

fuzz-build: modes $(FUZZ_BIN)

fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	@sh fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_BIN)

# ---- valgrind (tests/README.md): the integration tests that start warrantd,
# with the daemon under memcheck. Not in CI: it takes a quarter of an hour.
valgrind: deps
	@$(MAKE) --no-print-directory all unit
	@sh tests/valgrind.sh $(BUILD)

# ---- static analysis (tests/README.md "Static analysis"): the layering check
# (scripts/layers.sh: includes point down, no circle), cppcheck and clang-tidy
# (Debian 12's), configured by .cppcheck-suppressions and .clang-tidy; any
# finding fails. scan-build (clang-tools) runs the analyzer over a full build;
# without it lint fails rather than passing with one analyzer fewer.
LINT_SRC   := $(wildcard src/*.c src/*/*.c)
TIDY_FLAGS := -std=c11 -D_FILE_OFFSET_BITS=64 -Iinclude -I$(BUILD)/gen $(PKG_CFLAGS)
# The man pages: nothing at WARNING or above (STYLE notes such as "referenced
# manual not found" depend on what the machine has installed).
MAN_PAGES := $(wildcard man/*.[1-8])
# cppcheck reads no system header: it is given the two whose macros shape
# our declarations (jansson's, and <sys/queue.h>'s list heads).
QUEUE_H    := $(firstword $(wildcard /usr/include/*/sys/queue.h /usr/include/sys/queue.h))

lint: $(GEN_H) lint-man
	sh scripts/layers.sh
	@echo "cppcheck $$(cppcheck --version | cut -d' ' -f2), clang-tidy $$(clang-tidy --version | sed -n 's/.*LLVM version \([0-9.]*\).*/\1/p')"
	cppcheck --enable=warning,portability,performance --std=c11 --inline-suppr \
		--error-exitcode=1 --quiet -Iinclude -I$(BUILD)/gen --include=/usr/include/jansson.h \
		--include=$(QUEUE_H) -D_FILE_OFFSET_BITS=64 --suppressions-list=.cppcheck-suppressions src include
	@fail=0; for f in $(LINT_SRC); do \
		clang-tidy --quiet $$f -- $(TIDY_FLAGS) || fail=1; \
	done; test $$fail = 0
	@command -v scan-build >/dev/null || \
		{ echo "lint: scan-build not installed (Debian clang-tools: make deps)"; exit 1; }
	@rm -rf build/scan && scan-build -o build/scan/report --status-bugs \
		$(MAKE) --no-print-directory BUILD=build/scan scan-objs

lint-man:
	mandoc -T lint -W warning $(MAN_PAGES)

# What scan-build compiles: every source.
SCAN_OBJ := $(CORE_OBJ) $(MAINS:src/%.c=$(BUILD)/obj/main-%.o)
$(BUILD)/obj/main-%.o: src/%.c $(wildcard include/*/*.h) | $(BUILD)/obj $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c -o $@ $<
scan-objs: $(SCAN_OBJ)

UNITS := warrantd.service warrantd@.service warrantd-redis-tls.service warrantd-web.service \
	warrantctl-metrics.service warrantctl-metrics.timer

# The configuration an installation starts with: the example, with a key
# that fails `warrantd -t` (and so the unit's ExecStartPre) until an operator
# has made it theirs, and key files that do not exist yet.
$(BUILD)/warrantd.ini.dist: conf/warrantd.ini | $(BUILD)/obj
	sed -e '/^\[daemon\]$$/a\' \
	    -e '# NOT CONFIGURED. Set [records] verify_key_file, [oauth] and your [action]\' \
	    -e '# sections (see warrantd.ini(5)), then delete the next line. Until then\' \
	    -e '# "warrantd -t" fails and the service does not start.\' \
	    -e 'UNCONFIGURED = delete this line once the file is configured' \
	    -e 's|^# PLACEHOLDER: conf/decider.pub.*|# The decider'"'"'s public key: /etc/warrantd/credentials/decider.pub (LoadCredential=).|' \
	    -e 's|^# PLACEHOLDER: conf/client-secret.*|# The client secret: /etc/warrantd/credentials/client-secret (LoadCredential=),|' \
	    -e 's|^# credential or a file readable by the daemon only.|# mode 0600, readable by root only.|' \
	    conf/warrantd.ini > $@

install: all $(BUILD)/warrantd.ini.dist
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(DOCDIR)/policy \
		$(DESTDIR)$(SYSCONFDIR)/warrantd $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(BASHCOMPDIR)
	# the LoadCredential= sources, also read by `warrantd -t` and warrantctl by hand
	install -d -m 0700 $(DESTDIR)$(SYSCONFDIR)/warrantd/credentials
	install -m 0755 bin/warrantd bin/warrantctl bin/warrantd-web $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 conf/warrantd.ini $(DESTDIR)$(DOCDIR)/warrantd.ini.example
	install -m 0644 conf/stunnel-redis.conf $(DESTDIR)$(DOCDIR)/stunnel-redis.conf.example
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 examples/policy/*.rego examples/policy/*.json $(DESTDIR)$(DOCDIR)/policy/
	install -d $(DESTDIR)$(DOCDIR)/policy/cerbos/tests
	install -m 0644 examples/policy/cerbos/*.yaml $(DESTDIR)$(DOCDIR)/policy/cerbos/
	install -m 0644 examples/policy/cerbos/tests/*.yaml $(DESTDIR)$(DOCDIR)/policy/cerbos/tests/
	install -d $(DESTDIR)$(DOCDIR)/prometheus
	install -m 0644 examples/prometheus/warrantd.rules.yml examples/grafana-dashboard.json \
		$(DESTDIR)$(DOCDIR)/prometheus/
	install -m 0644 man/warrantctl.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 man/warrantd.ini.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 man/warrantd.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 0644 man/warrantd.8 man/warrantd-web.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 completion/warrantctl $(DESTDIR)$(BASHCOMPDIR)/warrantctl
	install -d $(DESTDIR)$(ZSHCOMPDIR)
	install -m 0644 completion/_warrantctl $(DESTDIR)$(ZSHCOMPDIR)/_warrantctl
	# never over an operator's configuration
	[ -e $(DESTDIR)$(SYSCONFDIR)/warrantd/warrantd.ini ] || \
		install -m 0644 $(BUILD)/warrantd.ini.dist $(DESTDIR)$(SYSCONFDIR)/warrantd/warrantd.ini
	for u in $(UNITS); do \
		sed -e 's|/usr/local/bin/|$(PREFIX)/bin/|g' \
		    -e 's|/usr/local/share/doc/warrantd/|$(DOCDIR)/|g' \
		    -e 's|/usr/local/lib/systemd/system/|$(UNITDIR)/|g' \
		    -e 's|(make install)|(make install or the package)|' \
		    systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u; \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$u; \
	done

# The Debian package, built from a copy of the tree (dpkg-buildpackage
# cleans its tree, which would take the test builds with it): build/deb/.
deb:
	@sh scripts/mkdeb.sh build/deb

# Builds the package and checks what is in it (tests/deb.sh).
test-deb: deps
	@sh tests/deb.sh build/deb

clean:
	rm -rf build bin

-include $(wildcard $(BUILD)/obj/*/*.d)
