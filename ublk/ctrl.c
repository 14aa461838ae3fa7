/* /dev/ublk-control: control commands as io_uring commands (SQE128). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ublk.h"

int
ub_ctrl_open(struct ub_ctrl *c)
{
	int r;

	c->fd = open("/dev/ublk-control", O_RDWR | O_CLOEXEC);
	if (c->fd < 0) {
		r = -errno;
		ub_log("/dev/ublk-control: %s%s", strerror(errno),
		       errno == ENOENT ? " (is ublk_drv loaded? modprobe ublk_drv;"
		       " the kernel needs CONFIG_BLK_DEV_UBLK, e.g. Debian's 6.12)" : "");
		return r;
	}
	r = io_uring_queue_init(4, &c->ring, IORING_SETUP_SQE128);
	if (r < 0) {
		ub_log("io_uring_queue_init (SQE128): %s", strerror(-r));
		close(c->fd);
		c->fd = -1;
		return r;
	}
	return 0;
}

void
ub_ctrl_close(struct ub_ctrl *c)
{
	if (c->fd < 0)
		return;
	io_uring_queue_exit(&c->ring);
	close(c->fd);
	c->fd = -1;
}

int
ub_ctrl_cmd(struct ub_ctrl *c, unsigned op, uint32_t dev_id, void *buf,
	    uint16_t len, uint64_t data0)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
	struct ublksrv_ctrl_cmd *cmd;
	struct io_uring_cqe *cqe;
	int r;

	if (sqe == NULL)
		return -EBUSY;
	memset((void *)sqe, 0, 2 * sizeof(*sqe));   /* SQE128 */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c->fd;
	sqe->cmd_op = op;
	cmd = (struct ublksrv_ctrl_cmd *)(void *)sqe->cmd;
	cmd->dev_id = dev_id;
	cmd->queue_id = (uint16_t)-1;
	cmd->addr = (uintptr_t)buf;
	cmd->len = len;
	cmd->data[0] = data0;
	r = io_uring_submit_and_wait(&c->ring, 1);
	if (r < 0)
		return r;
	r = io_uring_wait_cqe(&c->ring, &cqe);
	if (r < 0)
		return r;
	r = cqe->res;
	io_uring_cqe_seen(&c->ring, cqe);
	return r;
}
