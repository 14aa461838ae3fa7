# rdmablk: an RDMA-backed network block device.
#   make                 build into build/
#   make check           unit tests, then integration tests over real RDMA
#                        (in a QEMU guest when this host has no RDMA device)
#   make demo            the main job, end to end
#   make bench           performance side by side (QUICK=1 for a short run)
#   make SANITIZE=1 ...  the same with ASan and UBSan, built into build-san/
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
PREFIX  ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes \
           -Wshadow -Wpointer-arith -Wcast-qual -Wsign-compare -Wformat=2 \
           -Wvla -Wundef
CPPFLAGS += -D_GNU_SOURCE -Icommon -Iinitiator
ALL_CFLAGS = -std=gnu11 -fPIC $(CFLAGS) $(WARN) $(SANFLAGS) -MMD -MP
LDFLAGS += $(SANFLAGS)
VERBS_LIBS := -lrdmacm -libverbs -lpthread
TARGET_LIBS := $(VERBS_LIBS) -lcrypto -luring -lrbd -lrados
INIT_LIBS := $(VERBS_LIBS) -lcrypto

NBDKIT_PLUGINDIR := $(shell pkg-config nbdkit --variable=plugindir 2>/dev/null || echo $(PREFIX)/lib/nbdkit/plugins)

COMMON_SRCS    := $(sort $(wildcard common/*.c))
TARGET_SRCS    := $(sort $(wildcard target/*.c))
INITIATOR_SRCS := $(sort $(wildcard initiator/*.c))
PLUGIN_SRCS    := $(sort $(wildcard plugin/*.c))
UBLK_SRCS      := $(sort $(wildcard ublk/*.c))
UNIT_SRCS      := $(sort $(wildcard tests/unit/test-*.c))
TOOL_SRCS      := $(sort $(wildcard tests/tools/*.c))

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))
COMMON_OBJS    := $(call obj,$(COMMON_SRCS))
TARGET_OBJS    := $(call obj,$(TARGET_SRCS))
TARGET_LIBOBJS := $(filter-out $(BUILD)/target/main.o,$(TARGET_OBJS))
INITIATOR_OBJS := $(call obj,$(INITIATOR_SRCS))
PLUGIN_OBJS    := $(call obj,$(PLUGIN_SRCS))
UBLK_OBJS      := $(call obj,$(UBLK_SRCS))
UNIT_BINS      := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
TOOL_BINS      := $(patsubst tests/tools/%.c,$(BUILD)/tests/%,$(TOOL_SRCS))

TARGET_BIN := $(BUILD)/rdmablk-target
LIB        := $(BUILD)/librdmablk.a
PLUGIN     := $(BUILD)/nbdkit-rdma-plugin.so
UBLK_BIN   := $(BUILD)/rdmablk-ublk

.PHONY: all check check-unit check-integration check-long demo bench install clean

all: $(TARGET_BIN) $(LIB) $(PLUGIN) $(UBLK_BIN) $(TOOL_BINS) $(UNIT_BINS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(TARGET_BIN): $(TARGET_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(TARGET_LIBS)

$(LIB): $(INITIATOR_OBJS) $(COMMON_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(PLUGIN): $(PLUGIN_OBJS) $(LIB)
	$(CC) $(LDFLAGS) -shared -o $@ $(PLUGIN_OBJS) $(LIB) $(INIT_LIBS)

$(UBLK_BIN): $(UBLK_OBJS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(UBLK_OBJS) $(LIB) $(INIT_LIBS) -luring

# nbdkit_* symbols come from the nbdkit executable, so no -z defs here.
# Unit tests link everything but the target's main().
$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(TARGET_LIBOBJS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(TARGET_LIBOBJS) $(LIB) $(TARGET_LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/tools/%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(INIT_LIBS)

export RDMABLK_BUILD := $(abspath $(BUILD))
export RDMABLK_SANITIZE := $(SANITIZE)

# The hostile-initiator test runs the target built with ASan/UBSan, so check builds both.
# With SANITIZE=thread only the ThreadSanitizer build and its subset (TSAN_TESTS) run.
TSAN_TESTS ?= tests/test-initiator-io.sh tests/test-initiator-leader.sh tests/test-target-io.sh tests/test-plugin-reconnect.sh
ifeq ($(SANITIZE),thread)
check:
	scripts/install-deps
	$(MAKE) all
	INTEGRATION_TESTS="$(TSAN_TESTS)" tests/run-check
else
check:
	scripts/install-deps
	$(MAKE) all
	$(MAKE) all SANITIZE=1
	tests/run-check
endif

check-unit: all
	tests/run-check --unit-only

check-integration: all
	tests/run-integration

check-long:
	scripts/install-deps
	$(MAKE) all
	tests/run-long

demo:
	scripts/install-deps
	$(MAKE) all
	scripts/demo

bench: all
	scripts/bench $(if $(QUICK),--quick)

SYSTEMDDIR ?= $(shell pkg-config systemd --variable=systemdsystemunitdir 2>/dev/null || echo /lib/systemd/system)
SYSUSERSDIR ?= $(shell pkg-config systemd --variable=sysusersdir 2>/dev/null || echo /usr/lib/sysusers.d)
MANDIR ?= $(PREFIX)/share/man

install: $(TARGET_BIN) $(PLUGIN) $(UBLK_BIN)
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(NBDKIT_PLUGINDIR) $(DESTDIR)$(SYSCONFDIR)/rdmablk \
		$(DESTDIR)$(SYSTEMDDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(TARGET_BIN) $(DESTDIR)$(PREFIX)/sbin/rdmablk-target
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
