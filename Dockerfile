# mcplens ingest and api in one image: `ingest serve` and `api` are chosen by
# the entrypoint (docker-compose.yml sets it per service). Static binaries
# (CGO off) on distroless, running as nonroot.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
# Only the packages the two commands import (deploy/deploy_test.go checks
# this list against `go list -deps`), so that the build context's test
# engines (.deps/, hundreds of MB) and local state stay out of the image.
COPY api/ api/
COPY auth/ auth/
COPY chconn/ chconn/
COPY cmd/ cmd/
COPY compact/ compact/
COPY gauges/ gauges/
COPY pipeline/ pipeline/
COPY queries/ queries/
COPY retention/ retention/
COPY schema/ schema/
COPY spelling/ spelling/
COPY traffic/ traffic/
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ingest ./cmd/ingest \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/api ./cmd/api

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ingest /out/api /usr/local/bin/
USER nonroot:nonroot
EXPOSE 4318 8080
ENTRYPOINT ["/usr/local/bin/api"]
CMD ["-listen", "0.0.0.0:8080"]
