x = 'line\
continued'