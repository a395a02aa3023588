/* recon.h — YUV4MPEG2 writer for the encoder's reconstructed pictures
 * (--recon), cropped to the true size, so anyone can compare the encoder's
 * idea of the decoded video with a real decoder's. */
#ifndef MPE_RECON_H
#define MPE_RECON_H

#include <stdio.h>

#include "common/picture.h"

/* "YUV4MPEG2 W.. H.. F<num>:<den> Ip A1:1 C420jpeg\n" */
int mpe_y4m_write_header(FILE *f, int width, int height, int fps_num, int fps_den);
/* "FRAME\n" + Y, Cb, Cr planes cropped to width x height ((w+1)/2 x (h+1)/2). */
int mpe_y4m_write_picture(FILE *f, const MpePicture *pic);

#endif
