# mpegenc — build, test, demo.
#   make          build ./mpegenc and build/libmpegenc.a
#   make test     install missing Debian packages, build with -Werror, run every test
#   make demo     install, build, encode the sample clip in samples/
#   make bench    encode the solar clip and time it (needs ../shared/solar)

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra
ifeq ($(WERROR),1)
WARN    += -Werror
endif
CPPFLAGS_ALL := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I. $(CPPFLAGS)
PNG_CFLAGS := $(shell pkg-config --cflags libpng 2>/dev/null)
PNG_LIBS   := $(shell pkg-config --libs libpng 2>/dev/null || echo -lpng -lz)
LDLIBS_ALL := $(PNG_LIBS) -lm -lpthread $(LDLIBS)

BUILD := build
LIB   := $(BUILD)/libmpegenc.a
BIN   := mpegenc

LIB_SRCS := $(wildcard common/*.c bitstream/*.c gpu/*.c iqa/*.c encoder/*.c)
LIB_SRCS := $(filter-out encoder/main.c,$(LIB_SRCS))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_SRCS := $(wildcard tests/unit/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
DEPS := $(LIB_OBJS:.o=.d) $(BUILD)/obj/encoder/main.d $(TEST_BINS:%=%.d)

.PHONY: all deps test demo bench clean

all: $(BIN)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(BUILD)/obj/encoder/main.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS_ALL) -o $@

$(BUILD)/tests/%: tests/unit/%.c $(LIB) tests/test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -MMD -MP $< $(LIB) $(LDFLAGS) $(LDLIBS_ALL) -o $@

deps:
	@./tools/install-deps.sh

test: deps
	$(MAKE) WERROR=1 $(BIN) $(TEST_BINS)
	./tests/run.sh

demo: deps
	$(MAKE) $(BIN)
	./tools/demo.sh

bench: $(BIN)
	./tools/bench.sh

clean:
	rm -rf $(BUILD) $(BIN)

-include $(DEPS)
