/* Encode, decode and validate rdmablk wire messages (common/protocol.h). */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "protocol.h"

#define WHY(s) do { if (why) *why = (s); } while (0)

static void
hdr_put(void *buf, uint8_t type, size_t len)
{
	struct rb_msg_hdr *h = buf;

	h->type = type;
	h->reserved = 0;
	h->length = htole16((uint16_t)len);
}

/* Check that buf holds exactly one message of `type`, between min and max
 * bytes long, whose header agrees with what was received. */
static int
hdr_check(const void *buf, size_t len, uint8_t type, size_t min, size_t max,
	  const char **why)
{
	uint8_t got;
	int r = rb_msg_peek(buf, len, &got, why);

	if (r < 0)
		return r;
	if (got != type) {
		WHY("unexpected message type");
		return -EPROTO;
	}
	if (len < min) {
		WHY("message truncated");
		return -EBADMSG;
	}
	if (len > max) {
		WHY("message oversized");
		return -EBADMSG;
	}
	return 0;
}

int
rb_msg_peek(const void *buf, size_t len, uint8_t *type, const char **why)
{
	const struct rb_msg_hdr *h = buf;

	if (len < sizeof(*h)) {
		WHY("message shorter than its header");
		return -EBADMSG;
	}
	if (len > RB_MSG_BUF_SIZE) {
		WHY("message longer than a receive buffer");
		return -EBADMSG;
	}
	if (le16toh(h->length) != len) {
		WHY("header length disagrees with received length");
		return -EBADMSG;
	}
	if (h->reserved != 0) {
		WHY("reserved header byte is not zero");
		return -EPROTO;
	}
	*type = h->type;
	return 0;
}

/* A fixed-size, NUL-padded string field must contain its NUL. */
static int
string_field_ok(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

void
rb_conn_priv_encode(void *buf, uint16_t status, uint16_t queue_depth)
{
	struct rb_conn_priv *p = buf;

	memset(p, 0, sizeof(*p));
	p->magic = htole32(RB_MAGIC);
	p->version = htole16(RB_PROTO_VERSION);
	p->status = htole16(status);
	p->queue_depth = htole16(queue_depth);
}

int
rb_conn_priv_decode(const void *buf, size_t len, uint16_t *status,
		    uint16_t *queue_depth, const char **why)
{
	const struct rb_conn_priv *p = buf;

	/* RDMA CM pads private data: longer is fine, shorter is not. */
	if (buf == NULL || len < sizeof(*p)) {
		WHY("connection private data missing or truncated");
		return -EBADMSG;
	}
	if (le32toh(p->magic) != RB_MAGIC) {
		WHY("connection private data has a bad magic: not an rdmablk peer");
		return -EPROTO;
	}
	if (le16toh(p->version) != RB_PROTO_VERSION) {
		WHY("unsupported protocol version");
		return -EPROTO;
	}
	if (p->reserved0 != 0 || p->reserved1 != 0) {
		WHY("reserved connection private data field is not zero");
		return -EPROTO;
	}
	*status = le16toh(p->status);
	*queue_depth = le16toh(p->queue_depth);
	return 0;
}

size_t
rb_hello_encode(void *buf, const struct rb_hello_info *h)
{
	struct rb_hello *m = buf;

	memset(m, 0, sizeof(*m));
	hdr_put(m, RB_MSG_HELLO, sizeof(*m));
	m->version = htole16(RB_PROTO_VERSION);
	m->flags = htole16(h->flags);
	m->queue_depth = htole16(h->queue_depth);
	m->max_io = htole32(h->max_io);
	memcpy(m->nonce, h->nonce, RB_NONCE_LEN);
	memcpy(m->export_name, h->export_name,
	       strnlen(h->export_name, RB_EXPORT_NAME_MAX));
	return sizeof(*m);
}

int
rb_hello_decode(const void *buf, size_t len, struct rb_hello_info *h,
		const char **why)
{
	const struct rb_hello *m = buf;
	int r = hdr_check(buf, len, RB_MSG_HELLO, sizeof(*m), sizeof(*m), why);

	if (r < 0)
		return r;
	if (le16toh(m->version) != RB_PROTO_VERSION) {
		WHY("unsupported protocol version in HELLO");
		return -EPROTO;
	}
	if (m->reserved0 != 0 || m->reserved1 != 0) {
		WHY("reserved HELLO field is not zero");
		return -EPROTO;
	}
	h->flags = le16toh(m->flags);
	h->queue_depth = le16toh(m->queue_depth);
	h->max_io = le32toh(m->max_io);
	if (h->flags & ~RB_HELLO_FLAGS_ALL) {
		WHY("unknown HELLO flags");
		return -EINVAL;
	}
	if (h->queue_depth == 0) {
		WHY("HELLO asks for a queue depth of 0");
		return -EINVAL;
	}
	if (!string_field_ok(m->export_name, sizeof(m->export_name))) {
		WHY("export name is not NUL-terminated");
		return -EINVAL;
	}
	/* The same rule as the config's: no control characters or spaces
	 * ever reach a log line. */
	if (rb_export_name_valid(m->export_name, why) < 0)
		return -EINVAL;
	memcpy(h->nonce, m->nonce, RB_NONCE_LEN);
	memcpy(h->export_name, m->export_name, sizeof(h->export_name));
	return 0;
}

size_t
rb_challenge_encode(void *buf, const struct rb_auth_info *a)
{
	struct rb_challenge *m = buf;

	memset(m, 0, sizeof(*m));
	hdr_put(m, RB_MSG_CHALLENGE, sizeof(*m));
	memcpy(m->nonce, a->nonce, RB_NONCE_LEN);
	memcpy(m->mac, a->mac, RB_MAC_LEN);
	return sizeof(*m);
}

int
rb_challenge_decode(const void *buf, size_t len, struct rb_auth_info *a,
		    const char **why)
{
	const struct rb_challenge *m = buf;
	int r = hdr_check(buf, len, RB_MSG_CHALLENGE, sizeof(*m), sizeof(*m), why);

	if (r < 0)
		return r;
	if (m->reserved != 0) {
		WHY("reserved CHALLENGE field is not zero");
		return -EPROTO;
	}
	memcpy(a->nonce, m->nonce, RB_NONCE_LEN);
	memcpy(a->mac, m->mac, RB_MAC_LEN);
	return 0;
}

size_t
rb_auth_encode(void *buf, const struct rb_auth_info *a)
{
	struct rb_auth *m = buf;

	memset(m, 0, sizeof(*m));
	hdr_put(m, RB_MSG_AUTH, sizeof(*m));
	memcpy(m->mac, a->mac, RB_MAC_LEN);
	return sizeof(*m);
}

int
rb_auth_decode(const void *buf, size_t len, struct rb_auth_info *a,
	       const char **why)
{
	const struct rb_auth *m = buf;
	int r = hdr_check(buf, len, RB_MSG_AUTH, sizeof(*m), sizeof(*m), why);

	if (r < 0)
		return r;
	if (m->reserved != 0) {
		WHY("reserved AUTH field is not zero");
		return -EPROTO;
	}
	memset(a->nonce, 0, RB_NONCE_LEN);
	memcpy(a->mac, m->mac, RB_MAC_LEN);
	return 0;
}

size_t
rb_hello_reply_encode(void *buf, const struct rb_export_info *e)
{
	struct rb_hello_reply *m = buf;

	memset(m, 0, sizeof(*m));
	hdr_put(m, RB_MSG_HELLO_REPLY, sizeof(*m));
	m->status = htole16(e->status);
	if (e->status != RB_OK)
		return sizeof(*m);
	m->queue_depth = htole16(e->queue_depth);
	m->flags = htole32(e->flags);
	m->size = htole64(e->size);
	m->min_block = htole32(e->min_block);
	m->pref_block = htole32(e->pref_block);
	m->max_io = htole32(e->max_io);
	m->inline_max = htole32(e->inline_max);
	memcpy(m->description, e->description,
	       strnlen(e->description, RB_DESCRIPTION_MAX));
	return sizeof(*m);
}

static int
is_pow2(uint32_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

int
rb_hello_reply_decode(const void *buf, size_t len, struct rb_export_info *e,
		      const char **why)
{
	const struct rb_hello_reply *m = buf;
	int r = hdr_check(buf, len, RB_MSG_HELLO_REPLY, sizeof(*m), sizeof(*m), why);

	if (r < 0)
		return r;
	memset(e, 0, sizeof(*e));
	e->status = le16toh(m->status);
	if (e->status != RB_OK)
		return 0;
	e->queue_depth = le16toh(m->queue_depth);
	e->flags = le32toh(m->flags);
	e->size = le64toh(m->size);
	e->min_block = le32toh(m->min_block);
	e->pref_block = le32toh(m->pref_block);
	e->max_io = le32toh(m->max_io);
	e->inline_max = le32toh(m->inline_max);
	if (e->queue_depth == 0) {
		WHY("target granted a queue depth of 0");
		return -EINVAL;
	}
	if (e->flags & ~RB_EXP_FLAGS_ALL) {
		WHY("unknown export flags");
		return -EINVAL;
	}
	if (!is_pow2(e->min_block) || !is_pow2(e->pref_block) ||
	    e->min_block > e->pref_block || e->pref_block > e->max_io) {
		WHY("block sizes are not powers of two with min <= pref <= max-io");
		return -EINVAL;
	}
	if (e->max_io % e->min_block != 0 || e->size % e->min_block != 0) {
		WHY("max-io or size is not a multiple of the minimum block size");
		return -EINVAL;
	}
	if (e->inline_max > RB_INLINE_MAX || e->inline_max > e->max_io) {
		WHY("inline threshold exceeds the protocol limit");
		return -EINVAL;
	}
	if (!string_field_ok(m->description, sizeof(m->description))) {
		WHY("export description is not NUL-terminated");
		return -EINVAL;
	}
	memcpy(e->description, m->description, sizeof(e->description));
	return 0;
}

size_t
rb_request_encode(void *buf, const struct rb_req_info *r)
{
	struct rb_request *m = buf;
	size_t len = sizeof(*m);

	if ((r->flags & RB_REQ_INLINE) && r->opcode == RB_OP_WRITE)
		len += r->length;
	memset(m, 0, sizeof(*m));
	hdr_put(m, RB_MSG_REQUEST, len);
	m->opcode = r->opcode;
	m->ttl = r->ttl;
	m->flags = htole16(r->flags);
	m->tag = htole64(r->tag);
	m->offset = htole64(r->offset);
	m->length = htole32(r->length);
	m->rkey = htole32(r->rkey);
	m->addr = htole64(r->addr);
	return len;
}

int
rb_request_decode(const void *buf, size_t len, struct rb_req_info *r,
		  const char **why)
{
	const struct rb_request *m = buf;
	int rc = hdr_check(buf, len, RB_MSG_REQUEST, sizeof(*m),
			   RB_MSG_BUF_SIZE, why);

	if (rc < 0)
		return rc;
	r->opcode = m->opcode;
	r->ttl = m->ttl;
	r->flags = le16toh(m->flags);
	r->tag = le64toh(m->tag);
	r->offset = le64toh(m->offset);
	r->length = le32toh(m->length);
	r->rkey = le32toh(m->rkey);
	r->addr = le64toh(m->addr);
	r->inline_data = NULL;
	if (r->opcode >= RB_OP__COUNT) {
		WHY("unknown opcode");
		return -EINVAL;
	}
	if (r->flags & ~RB_REQ_FLAGS_ALL) {
		WHY("unknown request flags");
		return -EINVAL;
	}
	if ((r->flags & RB_REQ_INLINE) && r->opcode == RB_OP_READ) {
		/* Its data comes back in the reply: nothing follows here. */
		if (len != sizeof(*m)) {
			WHY("trailing bytes after an inline READ");
			return -EBADMSG;
		}
	} else if (r->flags & RB_REQ_INLINE) {
		if (r->opcode != RB_OP_WRITE) {
			WHY("inline data on a request that is not a READ or WRITE");
			return -EINVAL;
		}
		if (len - sizeof(*m) != r->length) {
			WHY("inline data length disagrees with the request length");
			return -EBADMSG;
		}
		r->inline_data = (const char *)buf + sizeof(*m);
	} else if (len != sizeof(*m)) {
		WHY("trailing bytes after a request without inline data");
		return -EBADMSG;
	}
	return 0;
}

uint16_t
rb_request_validate(const struct rb_req_info *r, const struct rb_req_limits *lim,
		    const char **why)
{
	int has_buffer = r->rkey != 0 || r->addr != 0;

	switch (r->opcode) {
	case RB_OP_NOP:
		if (r->length != 0 || r->offset != 0 || r->flags != 0 || has_buffer) {
			WHY("NOP carries an offset, length, flags, rkey or addr");
			return RB_EINVAL;
		}
		return RB_OK;
	case RB_OP_FLUSH:
		if (r->length != 0 || r->offset != 0 || r->flags != 0 || has_buffer) {
			WHY("FLUSH carries an offset, length, flags, rkey or addr");
			return RB_EINVAL;
		}
		return lim->read_only ? RB_EPERM : RB_OK;
	case RB_OP_READ:
		if ((r->flags & ~RB_REQ_INLINE) != 0) {
			WHY("READ with flags other than INLINE");
			return RB_EINVAL;
		}
		if ((r->flags & RB_REQ_INLINE) && !lim->read_inline) {
			WHY("inline READ on a connection that was not granted READ_INLINE");
			return RB_EINVAL;
		}
		if ((r->flags & RB_REQ_INLINE) && r->length > RB_READ_INLINE_MAX) {
			WHY("inline READ larger than RB_READ_INLINE_MAX");
			return RB_EINVAL;
		}
		if ((r->flags & RB_REQ_INLINE) && has_buffer) {
			WHY("inline READ carries an rkey or addr");
			return RB_EINVAL;
		}
		break;
	case RB_OP_WRITE:
		if ((r->flags & RB_REQ_NO_HOLE) != 0) {
			WHY("NO_HOLE on a WRITE");
			return RB_EINVAL;
		}
		if ((r->flags & RB_REQ_INLINE) && r->length > lim->inline_max) {
			WHY("inline WRITE larger than the granted inline threshold");
			return RB_EINVAL;
		}
		if ((r->flags & RB_REQ_INLINE) && has_buffer) {
			WHY("inline WRITE carries an rkey or addr");
			return RB_EINVAL;
		}
		break;
	case RB_OP_TRIM:
		if ((r->flags & RB_REQ_NO_HOLE) != 0) {
			WHY("NO_HOLE on a TRIM");
			return RB_EINVAL;
		}
		break;
	case RB_OP_WRITE_ZEROES:
		break;
	case RB_OP_BLOCK_STATUS:
		/* No data moves: the extents come back in the reply. */
		if (r->flags != 0 || has_buffer) {
			WHY("BLOCK_STATUS carries flags, an rkey or an addr");
			return RB_EINVAL;
		}
		break;
	default:
		WHY("unknown opcode");
		return RB_EINVAL;
	}

	if (r->length == 0) {
		WHY("zero-length request");
		return RB_EINVAL;
	}
	/* TRIM and WRITE_ZEROES move no data, so max-io does not bind them. */
	if ((r->opcode == RB_OP_READ || r->opcode == RB_OP_WRITE) &&
	    r->length > lim->max_io) {
		WHY("length exceeds max-io");
		return RB_EINVAL;
	}
	if (lim->min_block > 1 &&
	    (r->offset % lim->min_block != 0 || r->length % lim->min_block != 0)) {
		WHY("offset or length not aligned to the minimum block size");
		return RB_EINVAL;
	}
	/* Overflow-safe: never compute offset + length. */
	if (r->offset > lim->export_size ||
	    r->length > lim->export_size - r->offset) {
		WHY("offset + length beyond the end of the export");
		return RB_EOVERFLOW;
	}
	if (r->opcode != RB_OP_READ && r->opcode != RB_OP_BLOCK_STATUS && lim->read_only) {
		WHY("write to a read-only export");
		return RB_EPERM;
	}
	return RB_OK;
}

size_t
rb_reply_encode(void *buf, const struct rb_rep_info *r)
{
	struct rb_reply *m = buf;

	memset(m, 0, sizeof(*m));
	hdr_put(m, RB_MSG_REPLY, sizeof(*m));
	m->flags = r->flags;
	m->error = htole16(r->error);
	m->tag = htole64(r->tag);
	return sizeof(*m);
}

size_t
rb_reply_extents_encode(void *buf, const struct rb_rep_info *r, unsigned nextents)
{
	size_t len = rb_reply_encode(buf, r) + (size_t)nextents * sizeof(struct rb_extent);

	hdr_put(buf, RB_MSG_REPLY, len);
	return len;
}

size_t
rb_reply_data_encode(void *buf, const struct rb_rep_info *r, uint32_t data_len)
{
	struct rb_reply *m = buf;
	size_t len = rb_reply_encode(buf, r) + data_len;

	m->flags |= RB_REP_DATA;
	hdr_put(buf, RB_MSG_REPLY, len);
	return len;
}

uint32_t
rb_reply_imm(uint64_t tag)
{
	return htobe32((uint32_t)tag);
}

int
rb_reply_imm_decode(uint32_t imm, const void *buf, size_t len, struct rb_rep_info *r,
		    const char **why)
{
	if (len == 0 || len > RB_READ_INLINE_MAX) {
		WHY("a reply with immediate carries no data, or more than a READ may inline");
		return -EBADMSG;
	}
	memset(r, 0, sizeof(*r));
	r->flags = RB_REP_DATA;
	r->error = RB_OK;
	r->tag = be32toh(imm);
	r->data_len = (uint32_t)len;
	r->data = buf;
	return 0;
}

int
rb_reply_decode(const void *buf, size_t len, struct rb_rep_info *r,
		const char **why)
{
	const struct rb_reply *m = buf;
	size_t max = sizeof(*m) + RB_EXTENTS_MAX * sizeof(struct rb_extent);
	int rc;

	if (max < sizeof(*m) + RB_READ_INLINE_MAX)
		max = sizeof(*m) + RB_READ_INLINE_MAX;
	rc = hdr_check(buf, len, RB_MSG_REPLY, sizeof(*m), max, why);
	if (rc < 0)
		return rc;
	if (m->reserved0 != 0) {
		WHY("reserved reply field is not zero");
		return -EPROTO;
	}
	r->data_len = 0;
	r->data = NULL;
	if (m->flags & RB_REP_DATA) {
		r->flags = m->flags;
		r->error = le16toh(m->error);
		r->tag = le64toh(m->tag);
		r->nextents = 0;
		r->extents = NULL;
		if (r->flags & ~RB_REP_FLAGS_ALL) {
			WHY("unknown reply flags");
			return -EINVAL;
		}
		if (r->error != RB_OK || (r->flags & RB_REP_DURABLE)) {
			WHY("a reply with data is a failure or claims durability");
			return -EINVAL;
		}
		if (len == sizeof(*m) || len - sizeof(*m) > RB_READ_INLINE_MAX) {
			WHY("a reply with data carries none, or more than a READ may inline");
			return -EBADMSG;
		}
		r->data_len = (uint32_t)(len - sizeof(*m));
		r->data = (const char *)buf + sizeof(*m);
		return 0;
	}
	if (len - sizeof(*m) > RB_EXTENTS_MAX * sizeof(struct rb_extent)) {
		WHY("a reply without data carries more than its extents");
		return -EBADMSG;
	}
	if ((len - sizeof(*m)) % sizeof(struct rb_extent) != 0) {
		WHY("reply payload is not a whole number of extents");
		return -EBADMSG;
	}
	r->flags = m->flags;
	r->error = le16toh(m->error);
	r->tag = le64toh(m->tag);
	r->nextents = (unsigned)((len - sizeof(*m)) / sizeof(struct rb_extent));
	r->extents = r->nextents > 0 ? (const char *)buf + sizeof(*m) : NULL;
	if (r->flags & ~RB_REP_FLAGS_ALL) {
		WHY("unknown reply flags");
		return -EINVAL;
	}
	if (r->error != RB_OK && (r->flags & RB_REP_DURABLE)) {
		WHY("failed reply claims durability");
		return -EINVAL;
	}
	if (r->error != RB_OK && r->nextents > 0) {
		WHY("failed reply carries extents");
		return -EINVAL;
	}
	return 0;
}

void
rb_extent_get(const struct rb_rep_info *r, unsigned i, struct rb_extent_info *e)
{
	struct rb_extent x;

	memcpy(&x, (const char *)r->extents + (size_t)i * sizeof(x), sizeof(x));
	e->length = le32toh(x.length);
	e->flags = le32toh(x.flags);
}

void
rb_extent_list_init(struct rb_extent_list *l, void *buf)
{
	l->buf = buf;
	l->n = 0;
	l->covered = 0;
	l->last_flags = 0;
}

int
rb_extent_list_add(struct rb_extent_list *l, uint64_t len, uint32_t flags)
{
	struct rb_extent *x;

	if (l->n > 0 && l->last_flags == flags) {
		x = (struct rb_extent *)l->buf + (l->n - 1);
		if (le32toh(x->length) + len <= UINT32_MAX) {
			x->length = htole32((uint32_t)(le32toh(x->length) + len));
			l->covered += len;
			return 0;
		}
	}
	if (l->n >= RB_EXTENTS_MAX || len > UINT32_MAX)
		return -1;
	x = (struct rb_extent *)l->buf + l->n++;
	x->length = htole32((uint32_t)len);
	x->flags = htole32(flags);
	l->last_flags = flags;
	l->covered += len;
	return 0;
}

uint16_t
rb_extents_check(const struct rb_rep_info *r, uint32_t length, uint32_t min_block,
		 const char **why)
{
	struct rb_extent_info e;
	uint64_t sum = 0;
	unsigned i;

	if (r->nextents == 0) {
		WHY("BLOCK_STATUS reply without extents");
		return RB_EPROTO;
	}
	for (i = 0; i < r->nextents; i++) {
		rb_extent_get(r, i, &e);
		if (e.length == 0 || (min_block > 1 && e.length % min_block != 0)) {
			WHY("extent empty or not aligned to the minimum block size");
			return RB_EPROTO;
		}
		if ((e.flags & ~RB_EXT_FLAGS_ALL) != 0 ||
		    !(e.flags & RB_EXT_DATA) == !(e.flags & RB_EXT_HOLE)) {
			WHY("extent flags unknown, or not exactly one of DATA and HOLE");
			return RB_EPROTO;
		}
		sum += e.length;
	}
	if (sum > length) {
		WHY("extents cover more than the request's range");
		return RB_EPROTO;
	}
	return RB_OK;
}

size_t
rb_list_encode(void *buf)
{
	struct rb_list *m = buf;

	memset(m, 0, sizeof(*m));
	hdr_put(m, RB_MSG_LIST, sizeof(*m));
	m->version = htole16(RB_PROTO_VERSION);
	return sizeof(*m);
}

int
rb_list_decode(const void *buf, size_t len, const char **why)
{
	const struct rb_list *m = buf;
	int r = hdr_check(buf, len, RB_MSG_LIST, sizeof(*m), sizeof(*m), why);

	if (r < 0)
		return r;
	if (le16toh(m->version) != RB_PROTO_VERSION) {
		WHY("unsupported protocol version in LIST");
		return -EPROTO;
	}
	if (m->reserved != 0) {
		WHY("reserved LIST field is not zero");
		return -EPROTO;
	}
	return 0;
}

size_t
rb_list_reply_init(void *buf)
{
	struct rb_list_reply *m = buf;

	memset(m, 0, sizeof(*m));
	hdr_put(m, RB_MSG_LIST_REPLY, sizeof(*m));
	return sizeof(*m);
}

int
rb_list_reply_add(void *buf, size_t *len, const char *name,
		  const char *description)
{
	struct rb_list_reply *m = buf;
	size_t nl = strlen(name) + 1, dl = strlen(description) + 1;

	if (*len + nl + dl > RB_CTRL_MSG_MAX) {
		m->flags = htole16(le16toh(m->flags) | RB_LIST_TRUNCATED);
		return -1;
	}
	memcpy((char *)buf + *len, name, nl);
	memcpy((char *)buf + *len + nl, description, dl);
	*len += nl + dl;
	m->count = htole16((uint16_t)(le16toh(m->count) + 1));
	m->hdr.length = htole16((uint16_t)*len);
	return 0;
}

int
rb_list_reply_next(const void *buf, size_t len, size_t *pos,
		   const char **name, const char **desc)
{
	const char *p = buf;
	const char *n, *d;
	size_t at = *pos < sizeof(struct rb_list_reply) ?
		sizeof(struct rb_list_reply) : *pos;

	if (at >= len)
		return 0;
	n = p + at;
	d = memchr(n, '\0', len - at);
	if (d == NULL)
		return -EBADMSG;
	d++;
	if ((size_t)(d - p) >= len || memchr(d, '\0', len - (size_t)(d - p)) == NULL)
		return -EBADMSG;
	*name = n;
	*desc = d;
	*pos = (size_t)(d - p) + strlen(d) + 1;
	return 1;
}

int
rb_list_reply_decode(const void *buf, size_t len, uint16_t *count,
		     uint16_t *flags, const char **why)
{
	const struct rb_list_reply *m = buf;
	const char *name, *desc;
	size_t pos = 0;
	unsigned int seen = 0;
	int r = hdr_check(buf, len, RB_MSG_LIST_REPLY, sizeof(*m),
			  RB_CTRL_MSG_MAX, why);

	if (r < 0)
		return r;
	*count = le16toh(m->count);
	*flags = le16toh(m->flags);
	while ((r = rb_list_reply_next(buf, len, &pos, &name, &desc)) == 1) {
		if (rb_export_name_valid(name, why) < 0)
			return -EINVAL;
		seen++;
	}
	if (r < 0) {
		WHY("LIST_REPLY entry is not NUL-terminated");
		return r;
	}
	if (seen != *count) {
		WHY("LIST_REPLY count disagrees with its entries");
		return -EBADMSG;
	}
	return 0;
}

int
rb_export_name_valid(const char *name, const char **why)
{
	size_t i, n = strnlen(name, RB_EXPORT_NAME_MAX + 1);

	if (n == 0) {
		WHY("export name is empty");
		return -EINVAL;
	}
	if (n > RB_EXPORT_NAME_MAX) {
		WHY("export name is longer than 255 bytes");
		return -EINVAL;
	}
	if (name[0] == '.' || name[0] == '-') {
		WHY("export name starts with '.' or '-'");
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c <= ' ' || c >= 0x7f) {
			WHY("export name has a space, control or non-ASCII byte");
			return -EINVAL;
		}
	}
	return 0;
}

const char *
rb_opcode_name(uint8_t op)
{
	switch (op) {
	case RB_OP_READ:         return "READ";
	case RB_OP_WRITE:        return "WRITE";
	case RB_OP_FLUSH:        return "FLUSH";
	case RB_OP_TRIM:         return "TRIM";
	case RB_OP_WRITE_ZEROES: return "WRITE_ZEROES";
	case RB_OP_NOP:          return "NOP";
	case RB_OP_BLOCK_STATUS: return "BLOCK_STATUS";
	default:                 return "UNKNOWN";
	}
}

static const struct {
	uint16_t wire;
	int errnum;
	const char *name;
} error_map[] = {
	{ RB_OK,        0,          "OK" },
	{ RB_EPERM,     EPERM,      "EPERM" },
	{ RB_ENOENT,    ENOENT,     "ENOENT" },
	{ RB_EIO,       EIO,        "EIO" },
	{ RB_ENOMEM,    ENOMEM,     "ENOMEM" },
	{ RB_EACCES,    EACCES,     "EACCES" },
	{ RB_EBUSY,     EBUSY,      "EBUSY" },
	{ RB_EINVAL,    EINVAL,     "EINVAL" },
	{ RB_ENOSPC,    ENOSPC,     "ENOSPC" },
	{ RB_EPROTO,    EPROTO,     "EPROTO" },
	{ RB_EOVERFLOW, EOVERFLOW,  "EOVERFLOW" },
	{ RB_ENOTSUP,   ENOTSUP,    "ENOTSUP" },
	{ RB_ESHUTDOWN, ESHUTDOWN,  "ESHUTDOWN" },
	{ RB_ETIMEDOUT, ETIMEDOUT,  "ETIMEDOUT" },
};

const char *
rb_error_name(uint16_t err)
{
	size_t i;

	for (i = 0; i < sizeof(error_map) / sizeof(error_map[0]); i++)
		if (error_map[i].wire == err)
			return error_map[i].name;
	return "UNKNOWN";
}

int
rb_error_to_errno(uint16_t err)
{
	size_t i;

	for (i = 0; i < sizeof(error_map) / sizeof(error_map[0]); i++)
		if (error_map[i].wire == err)
			return error_map[i].errnum;
	return EIO;   /* an unknown code from a newer peer is still a failure */
}

uint16_t
rb_errno_to_error(int err)
{
	size_t i;

	if (err == EDQUOT)
		return RB_ENOSPC;
	if (err == EFBIG)
		return RB_EOVERFLOW;
	if (err == EOPNOTSUPP)
		return RB_ENOTSUP;
	if (err == ETIMEDOUT)
		return RB_EIO;  /* a backing call that timed out had started: only
				 * a request that never started is RB_ETIMEDOUT */
	for (i = 1; i < sizeof(error_map) / sizeof(error_map[0]); i++)
		if (error_map[i].errnum == err)
			return error_map[i].wire;
	return RB_EIO;
}
