# rdmablk: an RDMA-backed network block device.
#   make                 build into build/
#   make check           unit tests, then integration tests over real RDMA
#                        (in a QEMU guest when this host has no RDMA device)
#   make demo            the main job, end to end
#   make bench           performance side by side (QUICK=1 for a short run, ONLY="AR rbd-nbd" for some setups)
#   make SANITIZE=1 ...  the same with ASan and UBSan, built into build-san/
#   make WERROR=0 ...    warnings stay warnings (-Werror is on by default and in CI)
#   make V=1 ...         print each full compiler and linker command (default: one
#                        short line per step, "CC build/target/conn.o")
#   make check SANITIZE=thread
#                        ThreadSanitizer, built into build-tsan/: unit tests and the
#                        integration tests whose threads are ours (see docs/testing.md)

SANITIZE ?= 0
ifeq ($(SANITIZE),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else ifeq ($(SANITIZE),thread)
BUILD ?= build-tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else
BUILD ?= build
SANFLAGS :=
endif

CC      ?= cc
# Quiet by default, as nbdkit and the kernel build: $(call say,CC,FILE) prints "  CC  FILE"
# before a step and hides its command; V=1 prints the commands instead. A compiler's
# warnings and errors are printed either way.
V ?= 0
ifeq ($(V),1)
say =
else
say = @printf '  %-4s %s\n' '$(1)' '$(2)';
MAKEFLAGS += --no-print-directory
endif
# Keep the objects that pattern chains make (unit tests, tools): no "rm ..." line at the end,
# and no rebuild of them next time.
.SECONDARY:
PREFIX  ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
CFLAGS  ?= -O2 -g
# -Werror by default and in CI; WERROR=0 for a newer compiler whose new warnings
# should not stop a user's build.
WERROR  ?= 1
WARN    := -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -Wstrict-prototypes -Wmissing-prototypes \
           -Wshadow -Wpointer-arith -Wcast-qual -Wsign-compare -Wformat=2 \
           -Wvla -Wundef
MODULEDIR ?= $(PREFIX)/lib/rdmablk
CPPFLAGS += -D_GNU_SOURCE -Icommon -Iinitiator -DRDMABLK_MODULEDIR='"$(MODULEDIR)"'
ALL_CFLAGS = -std=gnu11 -fPIC $(CFLAGS) $(WARN) $(SANFLAGS) -MMD -MP
LDFLAGS += $(SANFLAGS)
VERBS_LIBS := -lrdmacm -libverbs -lpthread
TARGET_LIBS := $(VERBS_LIBS) -lcrypto -luring -ldl
RBD_LIBS    := -lrbd -lrados -lpthread
INIT_LIBS := $(VERBS_LIBS) -lcrypto

NBDKIT_PLUGINDIR := $(shell pkg-config nbdkit --variable=plugindir 2>/dev/null || echo $(PREFIX)/lib/nbdkit/plugins)

COMMON_SRCS    := $(sort $(wildcard common/*.c))
# The target's rooms are the folders of target/ (docs/design-notes.md); their
# files include each other's headers as "ROOM/NAME.h", from -Itarget.
# The RBD backend is a module the target loads for its first RBD export
# (target/rbd/rbd-module.h): all of target/rbd/ but the loader, rbd-module.c;
# rbd-spec.c is in both.
RBD_MOD_SRCS   := $(filter-out target/rbd/rbd-module.c,$(sort $(wildcard target/rbd/*.c)))
TARGET_SRCS    := $(filter-out $(filter-out target/rbd/rbd-spec.c,$(RBD_MOD_SRCS)), \
                  $(sort $(wildcard target/*.c target/*/*.c)))
INITIATOR_SRCS := $(sort $(wildcard initiator/*.c))
PLUGIN_SRCS    := $(sort $(wildcard plugin/*.c))
UBLK_SRCS      := $(sort $(wildcard ublk/*.c))
UNIT_SRCS      := $(sort $(wildcard tests/unit/test-*.c))
# Each tests/tools/rdmablk-*.c is a program; hostile-*.c are rdmablk-hostile's
# parts; the rest (raw-client.c) is a library every tool links.
TOOL_SRCS      := $(sort $(wildcard tests/tools/rdmablk-*.c))
HOSTILE_SRCS   := $(sort $(wildcard tests/tools/hostile-*.c))
TOOLLIB_SRCS   := $(filter-out $(TOOL_SRCS) $(HOSTILE_SRCS),$(sort $(wildcard tests/tools/*.c)))

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))
COMMON_OBJS    := $(call obj,$(COMMON_SRCS))
TARGET_OBJS    := $(call obj,$(TARGET_SRCS))
TARGET_LIBOBJS := $(filter-out $(BUILD)/target/main.o,$(TARGET_OBJS))
RBD_MOD_OBJS   := $(call obj,$(RBD_MOD_SRCS))
INITIATOR_OBJS := $(call obj,$(INITIATOR_SRCS))
PLUGIN_OBJS    := $(call obj,$(PLUGIN_SRCS))
UBLK_OBJS      := $(call obj,$(UBLK_SRCS))
UNIT_BINS      := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
TOOL_BINS      := $(patsubst tests/tools/%.c,$(BUILD)/tests/%,$(TOOL_SRCS))
HOSTILE_OBJS   := $(call obj,$(HOSTILE_SRCS))
TOOLLIB        := $(BUILD)/tests/libtools.a

TARGET_BIN := $(BUILD)/rdmablk-target
RBD_MOD    := $(BUILD)/rdmablk-rbd.so
LIB        := $(BUILD)/librdmablk.a
PLUGIN     := $(BUILD)/nbdkit-rdma-plugin.so
UBLK_BIN   := $(BUILD)/rdmablk-ublk

.PHONY: all check check-unit check-integration check-long demo bench trace install clean

all: $(TARGET_BIN) $(RBD_MOD) $(LIB) $(PLUGIN) $(UBLK_BIN) $(TOOL_BINS) $(UNIT_BINS)

# The target's rooms include each other as "ROOM/NAME.h", and so do the tests
# that include them.
$(BUILD)/target/%.o $(BUILD)/tests/%.o: CPPFLAGS += -Itarget

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

# Only what target/rbd/rbd-module.sym lists is exported to the module.
$(TARGET_BIN): $(TARGET_OBJS) $(COMMON_OBJS) target/rbd/rbd-module.sym
	$(call say,LD,$@)$(CC) $(LDFLAGS) -Wl,--dynamic-list=target/rbd/rbd-module.sym -o $@ $(filter %.o,$^) $(TARGET_LIBS)

# -Bsymbolic: the module's calls to its own rbd_backing_* stay in the module.
$(RBD_MOD): $(RBD_MOD_OBJS)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -shared -Wl,-Bsymbolic -o $@ $^ $(RBD_LIBS)

$(LIB): $(INITIATOR_OBJS) $(COMMON_OBJS)
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

# -z nodelete: nbdkit's dlclose at exit must not unmap code that a thread
# still runs (plugin/rdma.c, open_handles).
$(PLUGIN): $(PLUGIN_OBJS) $(LIB)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -shared -Wl,-z,nodelete -o $@ $(PLUGIN_OBJS) $(LIB) $(INIT_LIBS)

$(UBLK_BIN): $(UBLK_OBJS) $(LIB)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $(UBLK_OBJS) $(LIB) $(INIT_LIBS) -luring

# nbdkit_* symbols come from the nbdkit executable, so no -z defs here.
# Unit tests link everything but the target's main().
$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(TARGET_LIBOBJS) $(LIB)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(TARGET_LIBOBJS) $(LIB) $(TARGET_LIBS)
# test-request drives request.c and request-exec.c alone: what it calls on the connection,
# the pool, the ioq and the flusher are the test's own fakes (no verbs).
$(BUILD)/tests/unit/test-request: $(BUILD)/tests/unit/test-request.o \
		$(BUILD)/target/req/request.o $(BUILD)/target/req/request-exec.o \
		$(BUILD)/target/log.o $(LIB)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(TARGET_LIBS)

$(TOOLLIB): $(call obj,$(TOOLLIB_SRCS))
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

$(BUILD)/tests/rdmablk-hostile: $(HOSTILE_OBJS)

# rdmablk-ceph talks to the RBD tests' monitors through librados.
$(BUILD)/tests/rdmablk-ceph: INIT_LIBS += -lrados

$(BUILD)/tests/%: $(BUILD)/tests/tools/%.o $(TOOLLIB) $(LIB)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(filter $(HOSTILE_OBJS),$^) $(TOOLLIB) $(LIB) $(INIT_LIBS)

export RDMABLK_BUILD := $(abspath $(BUILD))
export RDMABLK_SANITIZE := $(SANITIZE)

# The hostile-initiator test runs the target built with ASan/UBSan, so check builds both.
# With SANITIZE=thread only the ThreadSanitizer build and its subset (TSAN_TESTS) run.
TSAN_TESTS ?= tests/test-initiator-io.sh tests/test-initiator-leader.sh tests/test-initiator-adaptive-spin.sh tests/test-target-io.sh tests/test-target-io-pressure.sh tests/test-target-threads-placement.sh tests/test-target-threads-reload.sh tests/test-target-threads-sigterm.sh tests/test-plugin-reconnect.sh
# The builds before the tests use every CPU (`make check` is what a person waits for), unless
# the caller's own -j says otherwise.
CHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CHECK_J = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(CHECK_JOBS))
ifeq ($(SANITIZE),thread)
check:
	scripts/install-deps
	$(MAKE) $(CHECK_J) all
	INTEGRATION_TESTS="$(TSAN_TESTS)" tests/run-check
else
check:
	scripts/install-deps
	$(MAKE) $(CHECK_J) all
	$(MAKE) $(CHECK_J) all SANITIZE=1
	tests/run-check
endif

check-unit: all
	tests/run-check --unit-only

check-integration: all
	tests/run-integration

check-long:
	scripts/install-deps --check
	$(MAKE) all
	tests/run-long

demo:
	scripts/install-deps
	$(MAKE) all
	scripts/demo

bench: all
	scripts/bench $(if $(QUICK),--quick)

trace: all
	scripts/trace

SYSTEMDDIR ?= $(shell pkg-config systemd --variable=systemdsystemunitdir 2>/dev/null || echo /lib/systemd/system)
SYSUSERSDIR ?= $(shell pkg-config systemd --variable=sysusersdir 2>/dev/null || echo /usr/lib/sysusers.d)
MANDIR ?= $(PREFIX)/share/man

install: $(TARGET_BIN) $(RBD_MOD) $(PLUGIN) $(UBLK_BIN)
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(MODULEDIR) $(DESTDIR)$(NBDKIT_PLUGINDIR) $(DESTDIR)$(SYSCONFDIR)/rdmablk \
		$(DESTDIR)$(SYSTEMDDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(TARGET_BIN) $(DESTDIR)$(PREFIX)/sbin/rdmablk-target
	install -m 0644 $(RBD_MOD) $(DESTDIR)$(MODULEDIR)/rdmablk-rbd.so
	install -m 0755 $(PLUGIN) $(DESTDIR)$(NBDKIT_PLUGINDIR)/nbdkit-rdma-plugin.so
	install -m 0755 $(UBLK_BIN) $(DESTDIR)$(PREFIX)/sbin/rdmablk-ublk
	install -m 0644 target/rdmablk.conf.example $(DESTDIR)$(SYSCONFDIR)/rdmablk/rdmablk.conf.example
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g' target/rdmablk-target.service >$(DESTDIR)$(SYSTEMDDIR)/rdmablk-target.service
	chmod 0644 $(DESTDIR)$(SYSTEMDDIR)/rdmablk-target.service
	install -m 0644 target/rdmablk.sysusers $(DESTDIR)$(SYSUSERSDIR)/rdmablk.conf
	@# The unit runs as rdmablk: make the user now, unless staging into a DESTDIR
	@# (a package's postinst runs systemd-sysusers there).
	if [ -z "$(DESTDIR)" ] && command -v systemd-sysusers >/dev/null; then \
		systemd-sysusers $(SYSUSERSDIR)/rdmablk.conf; \
	fi
	for m in docs/man/*.[158]; do \
		[ -e "$$m" ] || continue; \
		s=$${m##*.}; install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; \
	done

clean:
	rm -rf build build-san build-tsan

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
