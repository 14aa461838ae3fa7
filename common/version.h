/* The release: one number for the target, the library, the plugin and
 * rdmablk-ublk. */
#ifndef RDMABLK_COMMON_VERSION_H
#define RDMABLK_COMMON_VERSION_H

#define RDMABLK_VERSION "0.1.0"

#endif
