#ifndef HOSTMOUNT_USERNS_H
#define HOSTMOUNT_USERNS_H
int hm_userns(unsigned uid_from, unsigned uid_to, unsigned gid_from, unsigned gid_to, int *step);
#endif
