/* rdmablk wire protocol, version 1.  See docs/protocol.md for the prose.
 *
 * BYTE ORDER: every multi-byte integer on the wire is little-endian.
 * Structs are packed and their sizes are fixed by _Static_assert below;
 * never send a struct without going through the rb_*_encode helpers and
 * never read one without the rb_*_decode helpers, which byte-swap and
 * validate sizes before any field is trusted.
 *
 * Message flow on one RC queue pair (initiator = I, target = T):
 *   RDMA CM connect, private data = struct rb_conn_priv (I -> T),
 *   accept private data = struct rb_conn_priv (T -> I)
 *   I -> T  RB_MSG_HELLO        (export name, wanted depth/features, nonce)
 *   T -> I  RB_MSG_CHALLENGE    (only when the export needs a secret)
 *   I -> T  RB_MSG_AUTH         (only after a CHALLENGE)
 *   T -> I  RB_MSG_HELLO_REPLY  (status; on success the export description)
 *   then any number of
 *   I -> T  RB_MSG_REQUEST      (READ/WRITE/FLUSH/TRIM/WRITE_ZEROES/NOP/
 *                                BLOCK_STATUS)
 *   T -> I  RB_MSG_REPLY        (a BLOCK_STATUS reply carries its extents)
 *   or, instead of HELLO, RB_MSG_LIST -> RB_MSG_LIST_REPLY, then disconnect.
 */
#ifndef RDMABLK_PROTOCOL_H
#define RDMABLK_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#define RB_MAGIC            0x4b424452u   /* "RDBK" read as little-endian */
#define RB_PROTO_VERSION    1
#define RB_DEFAULT_PORT     10810

#define RB_EXPORT_NAME_MAX  255           /* bytes, without the NUL */
/* The deepest queue either side asks for or grants (queue-depth). */
#define RB_MAX_QUEUE_DEPTH  1024
#define RB_DESCRIPTION_MAX  127           /* bytes, without the NUL */
#define RB_NONCE_LEN        32
#define RB_MAC_LEN          32            /* HMAC-SHA256 */

/* The largest control message either side ever sends; receive buffers for
 * control traffic are at least this big. */
#define RB_CTRL_MSG_MAX     4096
/* The largest inline payload a target may grant. */
#define RB_INLINE_MAX       4096
/* The largest READ whose data may come back in its reply. */
#define RB_READ_INLINE_MAX  4096
/* The largest message either side sends, and so the size of every message
 * buffer, receive and send, on both sides: a message larger than this is a
 * protocol violation. */
#define RB_MSG_BUF_SIZE     (RB_CTRL_MSG_MAX + 64)
/* The longest TRIM or WRITE_ZEROES a target accepts (longer: EINVAL).  A
 * protocol constant, as HELLO_REPLY has no field left for it; the target
 * runs one in pieces (docs/protocol.md). */
#define RB_DISCARD_MAX      (1u << 30)

/* Message types: the first byte of every SEND. */
enum rb_msg_type {
	RB_MSG_HELLO       = 1,
	RB_MSG_CHALLENGE   = 2,
	RB_MSG_AUTH        = 3,
	RB_MSG_HELLO_REPLY = 4,
	RB_MSG_REQUEST     = 5,
	RB_MSG_REPLY       = 6,
	RB_MSG_LIST        = 7,
	RB_MSG_LIST_REPLY  = 8,
};

/* Request opcodes. */
enum rb_opcode {
	RB_OP_READ         = 0,
	RB_OP_WRITE        = 1,
	RB_OP_FLUSH        = 2,
	RB_OP_TRIM         = 3,
	RB_OP_WRITE_ZEROES = 4,
	RB_OP_NOP          = 5,   /* keepalive: no data, always succeeds */
	RB_OP_BLOCK_STATUS = 6,   /* the allocation of a range: extents in the reply */
	RB_OP__COUNT
};

/* Request flags. */
#define RB_REQ_FUA        0x0001u  /* WRITE/WRITE_ZEROES/TRIM: durable before reply */
#define RB_REQ_INLINE     0x0002u  /* WRITE: the data follows the header in the SEND;
				    * READ (RB_EXP_READ_INLINE granted): the data
				    * comes back in the reply, no rkey is given */
#define RB_REQ_NO_HOLE    0x0004u  /* WRITE_ZEROES: must allocate, do not punch */
#define RB_REQ_FLAGS_ALL  (RB_REQ_FUA | RB_REQ_INLINE | RB_REQ_NO_HOLE)

/* Reply flags. */
#define RB_REP_DURABLE    0x01u    /* see docs/protocol.md "The durable bit" */
#define RB_REP_DATA       0x02u    /* the reply to an inline READ: its data
				    * follows the struct rb_reply */
#define RB_REP_FLAGS_ALL  (RB_REP_DURABLE | RB_REP_DATA)

/* Export feature flags, in the HELLO_REPLY. */
#define RB_EXP_READ_ONLY   0x0001u
#define RB_EXP_FLUSH       0x0002u
#define RB_EXP_FUA         0x0004u
#define RB_EXP_TRIM        0x0008u
#define RB_EXP_ZEROES      0x0010u
#define RB_EXP_MULTI_CONN  0x0020u  /* FLUSH covers writes from every connection */
#define RB_EXP_DURABLE_ALL 0x0040u  /* durability=always: every write is durable */
#define RB_EXP_FAST_ZERO   0x0080u  /* WRITE_ZEROES is a cheap metadata operation */
#define RB_EXP_SHARED      0x0100u  /* `shared = yes`: other targets serve the same
				     * backend, and what this one acknowledged
				     * (FLUSH included) holds there too */
#define RB_EXP_TTL         0x0200u  /* the target honours a request's ttl: it never
				     * starts the backing I/O of a request more
				     * than ttl seconds after it arrived */
#define RB_EXP_EXTENTS     0x0400u  /* the target answers BLOCK_STATUS */
#define RB_EXP_READ_INLINE 0x0800u  /* granted only to a HELLO with
				     * RB_HELLO_READ_INLINE: a READ of at most
				     * RB_READ_INLINE_MAX bytes may carry
				     * RB_REQ_INLINE, and its data comes back in
				     * the reply (RB_REP_DATA) */
#define RB_EXP_READ_IMM    0x1000u  /* granted only with RB_EXP_READ_INLINE, to a
				     * HELLO with RB_HELLO_READ_IMM: a successful
				     * inline READ's reply is its data alone, in
				     * a SEND with immediate (rb_reply_imm) */
#define RB_EXP_FLAGS_ALL   0x1fffu

/* HELLO flags (initiator wishes). */
#define RB_HELLO_SEND_INV   0x0001u /* reply SENDs may invalidate the request rkey */
/* The initiator binds CHALLENGE/AUTH proofs to the connection (GIDs and
 * QPNs, common/auth.h).  Every initiator since it sets it; a target refuses
 * a HELLO without it for an export that needs a secret (EPROTO). */
#define RB_HELLO_AUTH_BIND  0x0002u
/* The initiator takes a small READ's data in the reply SEND. */
#define RB_HELLO_READ_INLINE 0x0004u
/* With READ_INLINE: the initiator takes a successful inline READ's reply as
 * its data alone, in a SEND with immediate whose 32 bits are the low half
 * of the request's tag; it keeps those bits unique among its outstanding
 * requests on the connection. */
#define RB_HELLO_READ_IMM   0x0008u
#define RB_HELLO_FLAGS_ALL  (RB_HELLO_SEND_INV | RB_HELLO_AUTH_BIND | RB_HELLO_READ_INLINE | \
			     RB_HELLO_READ_IMM)

/* Wire error codes.  Values match Linux errno numbers so they read naturally
 * in logs, but each side maps them explicitly: never pass a raw errno. */
enum rb_error {
	RB_OK        = 0,
	RB_EPERM     = 1,    /* write to a read-only export */
	RB_ENOENT    = 2,    /* no such export */
	RB_EIO       = 5,    /* backing store I/O error, or RDMA transfer failed */
	RB_ENOMEM    = 12,   /* target out of resources */
	RB_EACCES    = 13,   /* address not allowed, or authentication failed */
	RB_EBUSY     = 16,   /* max-connections reached */
	RB_EINVAL    = 22,   /* malformed or out-of-range request */
	RB_ENOSPC    = 28,   /* backing store full */
	RB_EPROTO    = 71,   /* protocol violation (version, sequence) */
	RB_EOVERFLOW = 75,   /* offset + length beyond the export */
	RB_ENOTSUP   = 95,   /* operation not supported by this export */
	RB_ESHUTDOWN = 108,  /* target is shutting down, or fenced off a shared image */
	RB_ETIMEDOUT = 110,  /* not started within its ttl: nothing was done, resend */
};

/* Connection private data, both directions: 16 bytes, within RC's 56. */
struct rb_conn_priv {
	uint32_t magic;          /* RB_MAGIC */
	uint16_t version;        /* RB_PROTO_VERSION */
	uint16_t status;         /* accept: RB_OK; reject: an rb_error */
	uint16_t queue_depth;    /* connect: wanted; accept: granted */
	uint16_t reserved0;      /* zero */
	uint32_t reserved1;      /* zero */
} __attribute__((packed));

/* Every SEND starts with this. */
struct rb_msg_hdr {
	uint8_t  type;           /* enum rb_msg_type */
	uint8_t  reserved;       /* zero */
	uint16_t length;         /* total message bytes, header and payload */
} __attribute__((packed));

struct rb_hello {
	struct rb_msg_hdr hdr;
	uint16_t version;        /* RB_PROTO_VERSION */
	uint16_t flags;          /* RB_HELLO_* */
	uint16_t queue_depth;    /* wanted outstanding requests */
	uint16_t reserved0;
	uint32_t max_io;         /* largest request the initiator will send */
	uint32_t reserved1;
	uint8_t  nonce[RB_NONCE_LEN];        /* initiator's challenge */
	char     export_name[RB_EXPORT_NAME_MAX + 1];  /* NUL-terminated, NUL-padded */
} __attribute__((packed));

struct rb_challenge {
	struct rb_msg_hdr hdr;
	uint32_t reserved;
	uint8_t  nonce[RB_NONCE_LEN];        /* target's challenge */
	uint8_t  mac[RB_MAC_LEN];            /* target's proof, see security.md */
} __attribute__((packed));

struct rb_auth {
	struct rb_msg_hdr hdr;
	uint32_t reserved;
	uint8_t  mac[RB_MAC_LEN];            /* initiator's proof */
} __attribute__((packed));

struct rb_hello_reply {
	struct rb_msg_hdr hdr;
	uint16_t status;         /* rb_error; on error nothing else is valid */
	uint16_t queue_depth;    /* granted, 1..wanted */
	uint32_t flags;          /* RB_EXP_* */
	uint64_t size;           /* export size, bytes */
	uint32_t min_block;      /* smallest alignment the target accepts */
	uint32_t pref_block;     /* preferred I/O size */
	uint32_t max_io;         /* largest single request, bytes */
	uint32_t inline_max;     /* largest WRITE payload allowed inline */
	char     description[RB_DESCRIPTION_MAX + 1];  /* NUL-terminated */
} __attribute__((packed));

struct rb_request {
	struct rb_msg_hdr hdr;
	uint8_t  opcode;         /* enum rb_opcode */
	uint8_t  ttl;            /* with RB_EXP_TTL: start its backing I/O within
				  * this many seconds of its arrival, or not at
				  * all (RB_ETIMEDOUT); 0: no limit */
	uint16_t flags;          /* RB_REQ_* */
	uint64_t tag;            /* opaque, echoed in the reply */
	uint64_t offset;         /* bytes into the export */
	uint32_t length;         /* bytes */
	uint32_t rkey;           /* READ/WRITE: initiator buffer key */
	uint64_t addr;           /* READ/WRITE: initiator buffer address */
	/* followed by `length` bytes of data when RB_REQ_INLINE */
} __attribute__((packed));

struct rb_reply {
	struct rb_msg_hdr hdr;
	uint8_t  flags;          /* RB_REP_* */
	uint8_t  reserved0;
	uint16_t error;          /* rb_error */
	uint64_t tag;            /* the request's tag */
} __attribute__((packed));

/* A BLOCK_STATUS reply: the struct rb_reply, then (on success) 1 to
 * RB_EXTENTS_MAX of these, in order from the request's offset, covering a
 * prefix of its range (docs/protocol.md). */
struct rb_extent {
	uint32_t length;         /* bytes, a multiple of min_block, > 0 */
	uint32_t flags;          /* RB_EXT_*: exactly one of DATA and HOLE */
} __attribute__((packed));
#define RB_EXT_HOLE       0x1u     /* not allocated (reads as ZERO says) */
#define RB_EXT_ZERO       0x2u     /* reads as zeros */
#define RB_EXT_DATA       0x4u     /* allocated */
#define RB_EXT_FLAGS_ALL  (RB_EXT_HOLE | RB_EXT_ZERO | RB_EXT_DATA)
/* The most extents one reply carries. */
#define RB_EXTENTS_MAX    256

struct rb_list {
	struct rb_msg_hdr hdr;
	uint16_t version;        /* RB_PROTO_VERSION */
	uint16_t reserved;
} __attribute__((packed));

/* LIST_REPLY payload: `count` pairs of NUL-terminated strings
 * "name\0description\0", packed, filling at most RB_CTRL_MSG_MAX. */
struct rb_list_reply {
	struct rb_msg_hdr hdr;
	uint16_t count;
	uint16_t flags;          /* RB_LIST_TRUNCATED when not all fit */
} __attribute__((packed));
#define RB_LIST_TRUNCATED 0x0001u

_Static_assert(sizeof(struct rb_conn_priv) == 16, "rb_conn_priv");
_Static_assert(sizeof(struct rb_msg_hdr) == 4, "rb_msg_hdr");
_Static_assert(sizeof(struct rb_hello) == 308, "rb_hello");
_Static_assert(sizeof(struct rb_challenge) == 72, "rb_challenge");
_Static_assert(sizeof(struct rb_auth) == 40, "rb_auth");
_Static_assert(sizeof(struct rb_hello_reply) == 164, "rb_hello_reply");
_Static_assert(sizeof(struct rb_request) == 40, "rb_request");
_Static_assert(sizeof(struct rb_reply) == 16, "rb_reply");
_Static_assert(sizeof(struct rb_extent) == 8, "rb_extent");
_Static_assert(sizeof(struct rb_reply) + RB_EXTENTS_MAX * sizeof(struct rb_extent) <=
	       RB_MSG_BUF_SIZE, "a BLOCK_STATUS reply fits a receive buffer");
_Static_assert(sizeof(struct rb_list) == 8, "rb_list");
_Static_assert(sizeof(struct rb_list_reply) == 8, "rb_list_reply");
_Static_assert(sizeof(struct rb_request) + RB_INLINE_MAX <= RB_MSG_BUF_SIZE,
	       "an inline request fits a receive buffer");
_Static_assert(sizeof(struct rb_reply) + RB_READ_INLINE_MAX <= RB_MSG_BUF_SIZE,
	       "an inline READ's reply fits a receive buffer");
_Static_assert(RB_CTRL_MSG_MAX <= RB_MSG_BUF_SIZE, "control fits a receive buffer");
_Static_assert(RB_MSG_BUF_SIZE <= UINT16_MAX, "lengths fit rb_msg_hdr.length");

/* Decoded (host-order) forms.  Encoders take these and fill a wire buffer;
 * decoders take a received buffer and its received length, check length,
 * type, reserved fields and ranges, and fill these.  Every decoder returns 0
 * or a negative errno-style code (-EBADMSG: truncated or oversized,
 * -EPROTO: wrong type/magic/version, -EINVAL: field out of range), and sets
 * *why to a static string naming what was wrong. */

struct rb_hello_info {
	uint16_t flags, queue_depth;
	uint32_t max_io;
	uint8_t  nonce[RB_NONCE_LEN];
	char     export_name[RB_EXPORT_NAME_MAX + 1];
};

struct rb_export_info {
	uint16_t status, queue_depth;
	uint32_t flags;
	uint64_t size;
	uint32_t min_block, pref_block, max_io, inline_max;
	char     description[RB_DESCRIPTION_MAX + 1];
};

struct rb_req_info {
	uint8_t  opcode;
	uint8_t  ttl;              /* seconds; 0: none (docs/protocol.md) */
	uint16_t flags;
	uint64_t tag, offset, addr;
	uint32_t length, rkey;
	const void *inline_data;   /* points into the decoded buffer, or NULL */
};

struct rb_rep_info {
	uint8_t  flags;
	uint16_t error;
	uint64_t tag;
	/* A BLOCK_STATUS reply's extents, still in wire order and byte
	 * order (rb_extent_get); only a successful reply has any. */
	unsigned nextents;
	const void *extents;
	/* An inline READ's data (RB_REP_DATA): points into the decoded
	 * buffer, or NULL. */
	uint32_t data_len;
	const void *data;
};

/* An extent, decoded. */
struct rb_extent_info {
	uint32_t length;
	uint32_t flags;            /* RB_EXT_* */
};

/* Extents being written into a reply buffer, merging neighbours with the
 * same flags (the target's side). */
struct rb_extent_list {
	void    *buf;              /* RB_EXTENTS_MAX struct rb_extent */
	unsigned n;
	uint64_t covered;          /* bytes the extents add up to */
	uint32_t last_flags;
};

struct rb_auth_info {
	uint8_t nonce[RB_NONCE_LEN];   /* challenge only */
	uint8_t mac[RB_MAC_LEN];
};

/* Limits a target applies when validating requests on one connection. */
struct rb_req_limits {
	uint64_t export_size;
	uint32_t max_io;
	uint32_t min_block;       /* offsets and lengths of data ops align to it */
	uint32_t inline_max;
	int      read_inline;     /* RB_EXP_READ_INLINE was granted */
	int      read_only;
};

void rb_conn_priv_encode(void *buf, uint16_t status, uint16_t queue_depth);
int  rb_conn_priv_decode(const void *buf, size_t len, uint16_t *status,
			 uint16_t *queue_depth, const char **why);

/* Peek the message type after checking the header is complete and its
 * length field matches the received byte count. */
int  rb_msg_peek(const void *buf, size_t len, uint8_t *type, const char **why);

size_t rb_hello_encode(void *buf, const struct rb_hello_info *h);
int    rb_hello_decode(const void *buf, size_t len, struct rb_hello_info *h,
		       const char **why);

size_t rb_challenge_encode(void *buf, const struct rb_auth_info *a);
int    rb_challenge_decode(const void *buf, size_t len, struct rb_auth_info *a,
			   const char **why);
size_t rb_auth_encode(void *buf, const struct rb_auth_info *a);
int    rb_auth_decode(const void *buf, size_t len, struct rb_auth_info *a,
		      const char **why);

size_t rb_hello_reply_encode(void *buf, const struct rb_export_info *e);
int    rb_hello_reply_decode(const void *buf, size_t len,
			     struct rb_export_info *e, const char **why);

/* Encodes the header; when RB_REQ_INLINE is set on a WRITE the caller copies `length`
 * bytes to (char *)buf + sizeof(struct rb_request) itself.  Returns the
 * total message length. */
size_t rb_request_encode(void *buf, const struct rb_req_info *r);
/* Structural decode only: sizes, type, reserved fields, known opcode and
 * flags.  Semantic checks against an export are rb_request_validate. */
int    rb_request_decode(const void *buf, size_t len, struct rb_req_info *r,
			 const char **why);
/* Returns RB_OK or the rb_error to reply with. */
uint16_t rb_request_validate(const struct rb_req_info *r,
			     const struct rb_req_limits *lim, const char **why);

size_t rb_reply_encode(void *buf, const struct rb_rep_info *r);
/* A BLOCK_STATUS reply: the extents are already at buf + sizeof(struct
 * rb_reply) (rb_extent_list_add), nextents of them. */
size_t rb_reply_extents_encode(void *buf, const struct rb_rep_info *r, unsigned nextents);
/* An inline READ's reply: its data_len bytes of data already follow the
 * struct rb_reply in buf (RB_REP_DATA is set here). */
size_t rb_reply_data_encode(void *buf, const struct rb_rep_info *r, uint32_t data_len);
/* Accepts a reply followed by whole extents (at most RB_EXTENTS_MAX, none
 * on a failed reply), or, with RB_REP_DATA, a successful reply followed by
 * 1..RB_READ_INLINE_MAX bytes of data; whether the request was a
 * BLOCK_STATUS or an inline READ, and the payload against its range, the
 * initiator checks (rb_extents_check). */
int    rb_reply_decode(const void *buf, size_t len, struct rb_rep_info *r,
		       const char **why);
/* READ_IMM: the immediate (ibv_send_wr.imm_data, big-endian on the wire as
 * every immediate) of an inline READ's reply sent as its data alone. */
uint32_t rb_reply_imm(uint64_t tag);
/* Such a reply: len bytes of data at buf, the immediate as received.  The
 * tag comes back as its low 32 bits only; the initiator finds the rest.
 * 0, or negative with *why when len is 0 or more than RB_READ_INLINE_MAX. */
int    rb_reply_imm_decode(uint32_t imm, const void *buf, size_t len,
			   struct rb_rep_info *r, const char **why);
void   rb_extent_get(const struct rb_rep_info *r, unsigned i, struct rb_extent_info *e);
/* Start a list at buf (a reply buffer's extents). */
void   rb_extent_list_init(struct rb_extent_list *l, void *buf);
/* Append len bytes (> 0) with flags, merged into the last extent when the
 * flags match (and the sum fits 32 bits).  0, or -1 when the list is full
 * (nothing was added). */
int    rb_extent_list_add(struct rb_extent_list *l, uint64_t len, uint32_t flags);
/* The extents of a successful reply against the request's range: at least
 * one, each non-empty and aligned to min_block, exactly one of DATA and
 * HOLE, no unknown flags, and no more than length bytes in all.  RB_OK or
 * RB_EPROTO, with *why. */
uint16_t rb_extents_check(const struct rb_rep_info *r, uint32_t length, uint32_t min_block,
			  const char **why);

size_t rb_list_encode(void *buf);
int    rb_list_decode(const void *buf, size_t len, const char **why);

/* LIST_REPLY: start, then add entries until it returns -1 (full). */
size_t rb_list_reply_init(void *buf);
int    rb_list_reply_add(void *buf, size_t *len, const char *name,
			 const char *description);
/* Iterate: *pos starts at 0; returns 1 with name/desc set, 0 at the end,
 * negative on a malformed message. */
int    rb_list_reply_decode(const void *buf, size_t len, uint16_t *count,
			    uint16_t *flags, const char **why);
int    rb_list_reply_next(const void *buf, size_t len, size_t *pos,
			  const char **name, const char **desc);

const char *rb_opcode_name(uint8_t op);
const char *rb_error_name(uint16_t err);
/* Map between wire codes and errno values, both directions. */
int      rb_error_to_errno(uint16_t err);
uint16_t rb_errno_to_error(int err);

/* Export names: 1..RB_EXPORT_NAME_MAX bytes of printable ASCII without
 * spaces, '/' allowed, no leading '.' or '-'. */
int rb_export_name_valid(const char *name, const char **why);

#endif
