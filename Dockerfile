# The nhc-controller image, for those with Docker or Podman. `make image`
# builds the same image without a daemon (hack/image).
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t nhc-controller .

# The build stage compiles a static, trimmed binary with no build ID.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false -ldflags "-s -w -buildid= -X github.com/nodehealthcheck/nhc-controller/pkg/version.stamped=${VERSION}" \
    -o /out/nhc-controller ./cmd/nhc-controller

# distroless static, nonroot: no shell, no package manager, uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/nhc-controller /nhc-controller
USER 65532:65532
ENTRYPOINT ["/nhc-controller"]
