# sam build runs the layer's Makefile (../Makefile) in this folder when the template's Architecture is arm64.
ARCHITECTURE := arm64
