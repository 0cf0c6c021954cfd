# The nhc-controller image, for those with Docker or Podman. `make image`
# (hack/image) builds it without a daemon; this file lays out the same
# files on the same empty base: the static binary, its licence at
# /licenses/LICENSE, the nonroot user and group (65532) with their home,
# and a /tmp. An empty base leaves no base image to trust or pin. The
# digest differs from make image's (Docker's timestamps and layers, not the
# commit's); releases are built with make release, not with this file.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t nhc-controller .

# The build stage compiles a static, trimmed binary with no build ID, and
# lays out hack/image/rootfs.go's root filesystem around it. Its base is
# pinned by the digest of golang:1.26's multi-platform index, so a build
# never runs a compiler nobody reviewed; Dependabot proposes the next one
# (.github/dependabot.yml). To look one up by hand:
#   docker buildx imagetools inspect golang:1.26
FROM golang:1.26@sha256:3aff6657219a4d9c14e27fb1d8976c49c29fddb70ba835014f477e1c70636647 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false -ldflags "-s -w -buildid= -X github.com/nodehealthcheck/nhc-controller/pkg/version.stamped=${VERSION}" \
    -o /rootfs/nhc-controller ./cmd/nhc-controller
RUN mkdir -p /rootfs/etc /rootfs/licenses /rootfs/tmp /home-rootfs/nonroot \
    && printf 'root:x:0:\nnonroot:x:65532:\n' > /rootfs/etc/group \
    && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /rootfs/etc/passwd \
    && chmod 0644 /rootfs/etc/group /rootfs/etc/passwd \
    && install -m 0644 LICENSE /rootfs/licenses/LICENSE \
    && chmod 1777 /rootfs/tmp \
    && chmod 0700 /home-rootfs/nonroot

FROM scratch
COPY --from=build /rootfs/ /
# The home apart: COPY makes everything root's unless told otherwise.
COPY --from=build --chown=65532:65532 /home-rootfs/ /home/
ARG VERSION=dev
LABEL org.opencontainers.image.title="nhc-controller" \
      org.opencontainers.image.description="Kubernetes NodeHealthCheck controller" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/nodehealthcheck/nhc-controller" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/
WORKDIR /
USER 65532:65532
ENTRYPOINT ["/nhc-controller"]
