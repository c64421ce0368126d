#include <libheif/heif.h>
#include <libheif/heif_plugin.h>
#include <dav1d/dav1d.h>
#include <libde265/de265.h>
