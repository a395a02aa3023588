# mpegenc — build, test, demo.
#   make          build ./mpegenc and build/libmpegenc.a
#   make test     install missing Debian packages, build with -Werror, run every test
#   make test-unit   the edit-test loop: build with -Werror, run the unit programs and
#                 the end-to-end scripts not marked "# slow:" (under 2 min on 2 cores)
#   make demo     install, build, encode the sample clip in samples/
#   make bench    encode the solar clip and time it (needs ../shared/solar)
#   make bench-gpu   time the front-end kernels on the solar frames
#   make rd       BD-rates (PSNR-Y, SSIM, MAD) and CPU s/frame of mpegenc and the
#                 peers found (ffmpeg, y262, x262) on generated clips
#                 (RD_SET=full for the bigger set; RD_ARGS="--help" for options)
#   make bench-iqa   time the MAD and BLIINDS-II implementations
#   make bench-png   time the PNG decoders on the solar frames (one thread)
#   make test SANITIZE=address,undefined   the suite with sanitizers (own build dir)
#   make fuzz FUZZ_SECONDS=N   each fuzz target for N seconds (clang, libFuzzer)
#   make ci       the plain suite, the sanitized one, the fuzz targets; one tally
#   make install PREFIX=/usr/local [DESTDIR=]   binaries, headers, static and
#                 shared library, pkg-config file, man pages

.DEFAULT_GOAL := all
comma := ,

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra
ifeq ($(WERROR),1)
WARN    += -Werror
endif
CPPFLAGS_ALL := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I. $(CPPFLAGS)
PNG_CFLAGS := $(shell pkg-config --cflags libpng 2>/dev/null)
PNG_LIBS   := $(shell pkg-config --libs libpng zlib 2>/dev/null || echo -lpng -lz)
FFTW_LIBS  := $(shell pkg-config --libs fftw3 2>/dev/null || echo -lfftw3)
# libdeflate inflates the PNG fast path's image data (about twice zlib's
# speed): used when pkg-config or the compiler finds it (make LIBDEFLATE=0
# leaves it out); without it zlib inflates, make prints a note when it was
# not found, and the build config (build/config.txt) lacks
# -DMPE_HAVE_LIBDEFLATE.
LIBDEFLATE ?= $(shell { pkg-config --exists libdeflate || printf '\043include <libdeflate.h>\nint main(void){libdeflate_free_decompressor(libdeflate_alloc_decompressor());return 0;}\n' | \
                $(CC) -x c - -o /dev/null -ldeflate; } >/dev/null 2>&1 && echo 1 || echo 0)
ifeq ($(LIBDEFLATE),1)
DEFLATE_LIBS := $(shell pkg-config --libs libdeflate 2>/dev/null || echo -ldeflate)
CPPFLAGS_ALL += -DMPE_HAVE_LIBDEFLATE $(shell pkg-config --cflags libdeflate 2>/dev/null)
else ifeq ($(origin LIBDEFLATE),file)
$(info note: libdeflate not found (Debian: libdeflate-dev); PNG image data is inflated with zlib, about 1.75x slower)
endif
LDLIBS_ALL := $(PNG_LIBS) $(DEFLATE_LIBS) $(FFTW_LIBS) -lm -lpthread $(LDLIBS)

BUILD := build
LIB   := $(BUILD)/libmpegenc.a
BIN   := mpegenc
IQA_BIN := $(if $(wildcard cli/iqa_main.c),mpegenc-iqa)

# Sanitized build (make test SANITIZE=address,undefined; any -fsanitize=
# list, gcc or clang): everything, binaries included, goes into its own
# directory, so the plain build/ and ./mpegenc stay as they are.  The tests
# find the binaries through the exported MPEGENC/MPEGENC_IQA and BUILD, and
# MPE_TEST_SMALL=1 asks them for their small cases.  CUDA is left out: nvcc's
# host code is not instrumented, the static CUDA runtime reserves address
# space that collides with ASan's shadow, and device code needs
# compute-sanitizer, not ASan; the CUDA tests then say SKIPPED.
SANITIZE ?=
ifneq ($(SANITIZE),)
ifeq ($(origin BUILD),file)
BUILD := build/san-$(subst $(comma),-,$(SANITIZE))
LIB   := $(BUILD)/libmpegenc.a
endif
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
CFLAGS  += $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
CUDA    := 0
BIN     := $(BUILD)/mpegenc
IQA_BIN := $(if $(IQA_BIN),$(BUILD)/mpegenc-iqa)
export BUILD
export MPEGENC      := $(abspath $(BIN))
export MPEGENC_IQA  := $(abspath $(BUILD)/mpegenc-iqa)
export MPE_TEST_SMALL := 1
export ASAN_OPTIONS ?= detect_leaks=1:detect_stack_use_after_return=1
# PoCL (LLVM 15) keeps what it allocates to hand out a program binary,
# which OpenCL's program cache asks for (gpu/frontend_ocl.c)
export LSAN_OPTIONS ?= suppressions=$(abspath tests/lsan.supp)
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
endif
# Any other build folder (make BUILD=dir ...) keeps its binaries there too,
# so a side build (tests/e2e/install.sh's) never relinks ./mpegenc.
ifneq ($(BUILD),build)
BIN     := $(BUILD)/mpegenc
IQA_BIN := $(if $(IQA_BIN),$(BUILD)/mpegenc-iqa)
endif

# Fuzzing (make fuzz FUZZ_SECONDS=N): every tests/fuzz/fuzz_<name>.c is
# built with clang and libFuzzer + ASan + UBSan against a library built the
# same way in $(FUZZ_BUILD), then run for N seconds on a copy of
# tests/fuzz/corpus/<name>/ (tools/fuzz.sh).  The same sources also build,
# with tests/fuzz/regress_main.c instead of libFuzzer, into
# $(BUILD)/tests/test_fuzz_<name>: a regression test that feeds the corpus
# and tests/fuzz/regress/<name>/ (crash inputs found earlier) through the
# target in every make test.
FUZZ_CC      ?= clang
FUZZ_BUILD   ?= build/fuzz
FUZZ_SECONDS ?= 20
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

LIB_SRCS := $(wildcard common/*.c bitstream/*.c dsp/*.c input/*.c gpu/*.c iqa/*.c encoder/*.c cli/*.c)
LIB_SRCS := $(filter-out cli/main.c cli/iqa_main.c cli/mpi_main.c gpu/frontend_ocl.c,$(LIB_SRCS))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)

# OpenCL backend: built when the headers and the ICD loader are there
# (make OPENCL=0 leaves it out); kernels are embedded as a C string.
OPENCL ?= $(shell printf '\043include <CL/cl.h>\nint main(void){return clGetPlatformIDs(0,0,0);}\n' | \
            $(CC) -x c - -o /dev/null -lOpenCL >/dev/null 2>&1 && echo 1 || echo 0)
ifeq ($(OPENCL),1)
CPPFLAGS_ALL += -DMPE_HAVE_OPENCL
LDLIBS_ALL   += -lOpenCL
LIB_OBJS     += $(BUILD)/obj/gpu/frontend_ocl.o $(BUILD)/gen/frontend_cl.o
endif

$(BUILD)/gen/frontend_cl.c: gpu/frontend.cl tools/embed.sh
	@mkdir -p $(dir $@)
	./tools/embed.sh mpe_frontend_cl_source $< > $@

$(BUILD)/gen/frontend_cl.o: $(BUILD)/gen/frontend_cl.c $(CONFIG)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@

# CUDA backend: built when nvcc is found (make CUDA=0 leaves it out).  The
# runtime is linked statically, so the binary starts on machines without the
# NVIDIA driver; the backend's probe then reports "no driver" and auto falls
# back.  SASS for Hopper plus PTX that older or newer GPUs can JIT.
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CUDA ?= $(if $(NVCC),1,0)
ifeq ($(CUDA),1)
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
NVCCFLAGS  ?= -O3
NVCC_ARCH  ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75
NVCC_WARN  := -Xcompiler -Wall,-Wextra$(if $(filter 1,$(WERROR)),$(comma)-Werror) $(if $(filter 1,$(WERROR)),-Werror all-warnings)
CPPFLAGS_ALL += -DMPE_HAVE_CUDA
ifneq ($(wildcard iqa/mad_cuda.cu),)
CPPFLAGS_ALL += -DMPE_HAVE_MAD_CUDA
endif
LDLIBS_ALL   += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
CUDA_SRCS    := $(wildcard common/*.cu gpu/*.cu iqa/*.cu)
LIB_OBJS     += $(CUDA_SRCS:%.cu=$(BUILD)/obj/%.cu.o)
endif
# mad_cuda's cuFFT callbacks (iqa/mad_cuda_cb.cuh) as LTO-IR, embedded as a
# byte array: cuFFT links them into its kernels when the plan is made.
ifeq ($(CUDA),1)
ifneq ($(wildcard iqa/mad_cuda.cu),)
LIB_OBJS     += $(BUILD)/gen/mad_cuda_cb.o
endif
endif
$(BUILD)/gen/mad_cuda_cb.c: iqa/mad_cuda_cb.cuh $(CONFIG)
	@mkdir -p $(dir $@)
	$(NVCC) -x cu -DMAD_CUDA_CB_LTO -gencode arch=compute_75,code=lto_75 -rdc=true -fatbin -I. $< \
	    -o $(@:.c=.fatbin)
	{ echo '#include <stddef.h>'; \
	  $(CUDA_HOME)/bin/bin2c -c -n mad_cuda_cb_fatbin $(@:.c=.fatbin) | \
	      sed 's/^const unsigned char/_Alignas(8) const unsigned char/'; \
	  echo 'extern const size_t mad_cuda_cb_fatbin_size;'; \
	  echo 'const size_t mad_cuda_cb_fatbin_size = sizeof(mad_cuda_cb_fatbin);'; } > $@

$(BUILD)/gen/mad_cuda_cb.o: $(BUILD)/gen/mad_cuda_cb.c $(CONFIG)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu $(CONFIG)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) -I. -DMPE_HAVE_CUDA $(NVCC_WARN) -Xcompiler -fPIC -MMD -MP -MF $(@:.o=.d) -c $< -o $@
TEST_SRCS := $(wildcard tests/unit/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TEST_BINS += $(FUZZ_NAMES:%=$(BUILD)/tests/test_fuzz_%)
DEPS := $(LIB_OBJS:.o=.d) $(BUILD)/obj/cli/main.d $(BUILD)/obj/cli/iqa_main.d $(BUILD)/obj/cli/mpi_main.d $(TEST_BINS:%=%.d)

# mpegenc-mpi (cli/mpi_main.c): only where an MPI compiler wrapper is found
# (Open MPI's or MPICH's mpicc; make MPICC= leaves it out); tests/e2e/mpi.sh
# says SKIPPED without it.  Not in sanitized builds: the MPI runtime's own
# allocations would be reported as leaks.
MPICC ?= $(shell command -v mpicc 2>/dev/null)
MPI_BIN := $(if $(and $(MPICC),$(if $(SANITIZE),,1)),$(if $(filter build,$(BUILD)),,$(BUILD)/)mpegenc-mpi)
export MPEGENC_MPI := $(if $(MPI_BIN),$(abspath $(MPI_BIN)))

.PHONY: all deps test test-unit demo bench bench-gpu bench-iqa bench-png rd clean FORCE fuzz fuzz-bins ci install

all: $(BIN) $(IQA_BIN) $(MPI_BIN)


$(BUILD)/obj/cli/mpi_main.o: cli/mpi_main.c $(CONFIG)
	@mkdir -p $(dir $@)
	$(MPICC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -MMD -MP -c $< -o $@

$(MPI_BIN): $(BUILD)/obj/cli/mpi_main.o $(LIB)
	$(MPICC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS_ALL) -o $@

# Objects depend on the flags they were built with, so switching OPENCL or
# WERROR rebuilds (a -Werror run must see every warning).
CONFIG := $(BUILD)/config.txt
$(CONFIG): FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CPPFLAGS_ALL) $(WARN) $(CFLAGS) $(LDLIBS_ALL) $(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) $(NVCC_WARN)' | cmp -s - $@ || \
	    echo '$(CC) $(CPPFLAGS_ALL) $(WARN) $(CFLAGS) $(LDLIBS_ALL) $(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) $(NVCC_WARN)' > $@

# -fPIC: the same objects make the static and the shared library (no
# measurable cost on x86-64: the 10-frame solar clip at --threads 1 took
# 0.81-0.86 s user with and without it, the same stream)
$(BUILD)/obj/%.o: %.c $(CONFIG)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -fPIC -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(BUILD)/obj/cli/main.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS_ALL) -o $@

mpegenc-iqa: $(BUILD)/obj/cli/iqa_main.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS_ALL) -o $@

$(BUILD)/tests/%: tests/unit/%.c $(LIB) tests/test.h $(CONFIG)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -MMD -MP $< $(LIB) $(LDFLAGS) $(LDLIBS_ALL) -o $@

$(BUILD)/tests/test_fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/regress_main.c $(LIB) $(CONFIG)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -DMPE_FUZZ_NAME='"$*"' -MMD -MP $< \
	    tests/fuzz/regress_main.c $(LIB) $(LDFLAGS) $(LDLIBS_ALL) -o $@

# the libFuzzer binaries (make fuzz builds them through fuzz-bins in
# $(FUZZ_BUILD), where CC and CFLAGS are the fuzzing ones)
$(BUILD)/fuzzers/fuzz_%: tests/fuzz/fuzz_%.c $(LIB) $(CONFIG)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -fsanitize=fuzzer -MMD -MP $< $(LIB) \
	    $(LDFLAGS) $(LDLIBS_ALL) -o $@

$(BUILD)/mpegenc-iqa: $(BUILD)/obj/cli/iqa_main.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS_ALL) -o $@

$(BUILD)/bench/%: tests/bench/%.c $(LIB) $(CONFIG)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -MMD -MP $< $(LIB) $(LDFLAGS) $(LDLIBS_ALL) -o $@

deps:
	@./tools/install-deps.sh

test: deps
	$(MAKE) WERROR=1 $(BIN) $(IQA_BIN) $(MPI_BIN) $(TEST_BINS)
	./tests/run.sh

# no deps step: the loop assumes a machine make test has set up once
test-unit:
	$(MAKE) WERROR=1 $(BIN) $(IQA_BIN) $(MPI_BIN) $(TEST_BINS)
	./tests/run.sh --fast

demo:
	@./tools/install-deps.sh build
	$(MAKE) $(BIN)
	./tools/demo.sh

bench: $(BIN) $(IQA_BIN)
	./tools/bench.sh $(BENCH_ARGS)

# front-end kernels on the solar frames: BACKEND=opencl (default: every
# backend that can run here), checked against cpu before timing
# the clip set, encoders and columns: docs/BENCH.md "make rd"
rd: $(BIN) $(IQA_BIN)
	MPEGENC=$(abspath $(BIN)) python3 tools/rd.py $(RD_ARGS)

bench-gpu: $(BUILD)/bench/frontend
	./$(BUILD)/bench/frontend $(if $(BACKEND),--backend $(BACKEND))

# metrics: median time per call at 512x512 and 2048x2048, every
# implementation that can run here (C on all cores; CUDA with a GPU)
bench-iqa: $(BUILD)/bench/mad $(BUILD)/bench/bliinds
	./$(BUILD)/bench/mad
	./$(BUILD)/bench/bliinds

# PNG decoders (libpng, fast path with zlib, with libdeflate): CPU time per
# frame on one thread, the 2048² solar frames (else the small samples)
bench-png: $(BUILD)/bench/png
	./$(BUILD)/bench/png $(firstword $(wildcard ../shared/solar) samples/solar)/*.png

fuzz-bins: $(FUZZ_NAMES:%=$(BUILD)/fuzzers/fuzz_%)

fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) CUDA=0 OPENCL=0 SANITIZE= \
	    CFLAGS="-O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN)" LDFLAGS="$(FUZZ_SAN)" fuzz-bins
	./tools/fuzz.sh $(FUZZ_BUILD)/fuzzers $(FUZZ_SECONDS)

# CI (.ci/run): the plain suite, the sanitized suite (small inputs), each
# fuzz target for CI_FUZZ_SECONDS; one tally line at the end
CI_SANITIZE     ?= address,undefined
CI_FUZZ_SECONDS ?= 20
ci: deps
	@MAKE="$(MAKE)" ./tools/sanitize.sh ci "$(CI_SANITIZE)" "$(CI_FUZZ_SECONDS)"

# --- install: what a program embedding the encoder needs -------------------
# Headers keep their folders under include/mpegenc/ (mpegenc.h includes
# "encoder/encoder.h" ...), so pkg-config's -I$(includedir)/mpegenc finds
# them; <mpegenc.h> is the one include (examples/encode.c).
PREFIX  ?= /usr/local
DESTDIR ?=
SONAME  := libmpegenc.so.0
SHLIB   := $(BUILD)/$(SONAME)
# every header <mpegenc.h> reaches (tools/headers.sh follows the includes)
PUBLIC_HEADERS = $(shell ./tools/headers.sh encoder/mpegenc.h | grep -v '^encoder/mpegenc.h$$')
PC_PRIVATE := $(PNG_LIBS) $(DEFLATE_LIBS) $(FFTW_LIBS) -lm -lpthread $(if $(filter 1,$(OPENCL)),-lOpenCL) \
              $(if $(filter 1,$(CUDA)),-L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++)

$(SHLIB): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,$(SONAME) $(LDFLAGS) $^ $(LDLIBS_ALL) -o $@

$(BUILD)/mpegenc.pc: $(CONFIG) Makefile
	@mkdir -p $(dir $@)
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	    'Name: mpegenc' 'Description: MPEG-1/MPEG-2 video encoder with GPU front end and perceptual metrics' \
	    'Version: $(shell sed -n 's/^#define MPE_VERSION "\(.*\)"/\1/p' encoder/encoder.h)' \
	    'Libs: -L$${libdir} -lmpegenc' 'Libs.private: $(PC_PRIVATE)' \
	    'Cflags: -I$${includedir}/mpegenc' > $@

$(BUILD)/man/mpegenc.1: $(BIN) tools/man.sh
	@mkdir -p $(dir $@)
	./tools/man.sh $(abspath $(BIN)) > $@

$(BUILD)/man/mpegenc-iqa.1: $(IQA_BIN) tools/man.sh
	@mkdir -p $(dir $@)
	./tools/man.sh $(abspath $(IQA_BIN)) > $@

install: $(BIN) $(IQA_BIN) $(MPI_BIN) $(LIB) $(SHLIB) $(BUILD)/mpegenc.pc $(BUILD)/man/mpegenc.1 \
         $(if $(IQA_BIN),$(BUILD)/man/mpegenc-iqa.1)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	    $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/include/mpegenc
	install -m 755 $(BIN) $(IQA_BIN) $(MPI_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHLIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libmpegenc.so
	install -m 644 $(BUILD)/mpegenc.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 644 $(BUILD)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 encoder/mpegenc.h $(DESTDIR)$(PREFIX)/include/mpegenc/
	for h in $(PUBLIC_HEADERS); do \
	    install -d $(DESTDIR)$(PREFIX)/include/mpegenc/$$(dirname $$h) && \
	    install -m 644 $$h $(DESTDIR)$(PREFIX)/include/mpegenc/$$h || exit 1; \
	done

clean:
	rm -rf $(BUILD) $(BIN) $(IQA_BIN) $(MPI_BIN)

-include $(DEPS)
