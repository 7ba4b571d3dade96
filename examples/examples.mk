# examples.mk - builds and runs examples/*.c (included by the top Makefile).
#
#   make examples        build every examples/*.c into $(BUILD)/examples/
#   make test-examples   build them and run the runnable ones (make test
#                        runs this after the test suite)
#   make test-examples-tokio   the same checks on the Tokio counterparts
#                        (bench/peers/tokio/examples, built offline with
#                        cargo from Debian's crates; not part of make test)
#
# Every examples/NAME.c is one program, compiled as a user would compile
# it: C11, only the public headers (-Iinclude, no _GNU_SOURCE), -Wall
# -Wextra -Werror, linked with the static library. A new example is one
# new file: nothing here names an example.
#
# scripts/run-example.sh decides how each program is run: one with an
# expected output (examples/NAME.expected, or STEM.expected shared by the
# styles of one program: timeline_poll.c, timeline_async.c and a later
# timeline_fiber.c all print timeline.expected) is run and its stdout
# compared byte for byte; a network server (echo_*, line_*, http_hello_*)
# is started on a free loopback port, sent a fixed request and stopped
# with SIGINT; any other is only built.

EXAMPLE_SRCS := $(sort $(wildcard examples/*.c))
EXAMPLES := $(EXAMPLE_SRCS:examples/%.c=$(BUILD)/examples/%)
EXAMPLE_CFLAGS := -std=c11 $(OPT) -g $(WARN) -Iinclude $(CFLAGS)

.PHONY: examples test-examples test-examples-tokio

examples: $(EXAMPLES)

$(BUILD)/examples/%: examples/%.c $(LIB_A) examples/examples.mk
	@mkdir -p $(dir $@)
	$(call msg,CC,$<)
	$(Q)$(CC) $(EXAMPLE_CFLAGS) $(SANLD) \
		-MMD -MP -o $@ $< $(LIB_A) $(LDLIBS_ALL)

# Under make test the examples run once the suite has passed, not beside
# it (a server example must not compete with the timing tests).
test: test-examples
test-examples: $(EXAMPLES) $(if $(filter test,$(MAKECMDGOALS)),test-run)
	$(Q)sh scripts/run-example.sh $(EXAMPLES)

TOKIO_DIR := bench/peers/tokio
TOKIO_EXAMPLES := $(patsubst $(TOKIO_DIR)/examples/%.rs,%,\
	$(sort $(wildcard $(TOKIO_DIR)/examples/*.rs)))
test-examples-tokio:
	$(Q)cd $(TOKIO_DIR) && cargo build --release --offline -q --examples
	$(Q)sh scripts/run-example.sh \
		$(TOKIO_EXAMPLES:%=$(TOKIO_DIR)/target/release/examples/%)

FORMAT_SRCS += $(EXAMPLE_SRCS)

-include $(wildcard $(BUILD)/examples/*.d)
