/* Unit test for common/qpcaps.c: more than asked is fine, any field short
 * is refused and named with granted/asked; and rb_fd_set_nonblock. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "qpcaps.h"
#include "util.h"

#include "check.h"

int
main(void)
{
	struct ibv_qp_cap want = { .max_send_wr = 129, .max_recv_wr = 130,
				   .max_send_sge = 1, .max_recv_sge = 1,
				   .max_inline_data = 32 }, got;
	char err[160] = "";
	int fds[2];

	got = want;
	CHECK(rb_qp_caps_check(&got, &want, err, sizeof(err)) == 0);
	CHECK(err[0] == '\0');
	got.max_send_wr = 256;          /* rounded up */
	got.max_inline_data = 64;
	CHECK(rb_qp_caps_check(&got, &want, err, sizeof(err)) == 0);
	got.max_recv_wr = 128;
	CHECK(rb_qp_caps_check(&got, &want, err, sizeof(err)) == -1);
	CHECK(strstr(err, "recv_wr 128/130") != NULL);
	got = want;
	got.max_inline_data = 0;
	CHECK(rb_qp_caps_check(&got, &want, err, sizeof(err)) == -1);
	CHECK(strstr(err, "inline 0/32") != NULL);
	got = want;
	got.max_send_sge = 0;
	CHECK(rb_qp_caps_check(&got, &want, err, sizeof(err)) == -1);
	CHECK(strstr(err, "send_sge 0/1") != NULL);

	CHECK(pipe(fds) == 0);
	CHECK(!(fcntl(fds[0], F_GETFL) & O_NONBLOCK));
	CHECK(rb_fd_set_nonblock(fds[0]) == 0);
	CHECK(fcntl(fds[0], F_GETFL) & O_NONBLOCK);
	close(fds[0]);
	close(fds[1]);
	CHECK(rb_fd_set_nonblock(fds[0]) < 0);
	printf("test-qpcaps: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
